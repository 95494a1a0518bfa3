"""awm-envs's plugin: what this package contributes through the awm hooks."""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_env_sources(register: Register) -> None:
    """The bundles shipped inside this package (``awm_envs/catalog/``)."""
    from awm_envs.bundle.sources import CATALOG_DIR, FolderSource

    register("catalog", FolderSource(CATALOG_DIR))


@hookimpl
def register_commands(cli: click.Group) -> None:
    """``awm envs ...``: the group and each sub-command, attached here and nowhere else.

    An import error in any command module propagates, so ``awm`` names this plugin
    instead of starting with a command silently missing.
    """
    from awm_envs.cli.awm1k import export_awm_command, import_awm_command
    from awm_envs.cli.main import envs
    from awm_envs.cli.sandbox import sandbox_command
    from awm_envs.cli.validate import validate_command

    for command in (validate_command, import_awm_command, export_awm_command, sandbox_command):
        envs.add_command(command)
    cli.add_command(envs)
