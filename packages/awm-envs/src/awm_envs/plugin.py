"""awm-envs's plugin: what this package contributes through the awm hooks."""

from __future__ import annotations

import contextlib

import click

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_env_sources(register: Register) -> None:
    """The bundles shipped inside this package (``awm_envs/catalog/``)."""
    from awm_envs.sources import CATALOG_DIR, FolderSource

    register("catalog", FolderSource(CATALOG_DIR))


@hookimpl
def register_commands(cli: click.Group) -> None:
    """``awm envs ...``; other modules may attach sub-commands to the same group."""
    from awm_envs.cli import envs

    with contextlib.suppress(ImportError):  # `awm envs validate`, written separately
        import awm_envs.validate_cli  # noqa: F401
    import awm_envs.awm1k_cli  # noqa: F401  (import-awm / export-awm)
    from awm_envs.sandbox.cli import sandbox_command

    envs.add_command(sandbox_command)
    cli.add_command(envs)
