"""awm-envs's plugin: what this package contributes through the awm hooks."""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl
from awm_core.lazycli import add_lazy


@hookimpl
def register_verifier_signatures(register: Register) -> None:
    """The three built-in verifier signatures: awm's native one and the official release's two."""
    from awm_envs.verifiers.signatures import BUILTIN_ADAPTERS

    for adapter in BUILTIN_ADAPTERS:
        register(adapter.name, adapter)


@hookimpl
def register_env_sources(register: Register) -> None:
    """The bundles shipped inside this package (``awm_envs/catalog/``); ``awm run`` can open them."""
    from awm_envs.bundle.sources import CATALOG_DIR
    from awm_envs.pool.source import SessionFolderSource

    register("catalog", SessionFolderSource(CATALOG_DIR))
    # bundles installed by `awm envs pull` ($AWM_CACHE_DIR/envs), found by name like the catalog's
    from awm_envs.hub.cache import hub_cache_dir

    register("hub", SessionFolderSource(hub_cache_dir()))


@hookimpl
def register_perturbations(register: Register) -> None:
    """The built-in perturbations (corrupt-rows, inject, faults, idor), registered like a plugin's."""
    from awm_envs.perturb.builtin import CorruptRows, Faults, Idor, Inject

    for perturbation in (CorruptRows(), Inject(), Faults(), Idor()):
        register(perturbation.name, perturbation)


@hookimpl
def register_commands(cli: click.Group) -> None:
    """``awm envs ...``: the group and each sub-command, attached here and nowhere else.

    The group's module is light; each sub-command's module is imported when it
    runs (:mod:`awm_core.lazycli`), and an import error there names the command.
    """
    from awm_envs.cli.main import envs

    for name, target, doc in (
        (
            "validate",
            "awm_envs.cli.validate:validate_command",
            "Prove every task: initially incomplete, solved by its reference.",
        ),
        (
            "import-awm",
            "awm_envs.cli.awm1k:import_awm_command",
            "Convert an official AWM-1K release folder into awm bundles.",
        ),
        (
            "export-awm",
            "awm_envs.cli.awm1k:export_awm_command",
            "Write environments in the official AWM-1K layout (gen_*.jsonl).",
        ),
        (
            "prove",
            "awm_envs.cli.prove:prove_command",
            "Find reference solutions for unproven (imported) tasks with an agent.",
        ),
        (
            "sandbox",
            "awm_envs.cli.sandbox:sandbox_command",
            "Report how generated code is contained on this machine.",
        ),
        (
            "init",
            "awm_envs.cli.init:init_command",
            "Create a new environment bundle that validates as generated.",
        ),
        (
            "pull",
            "awm_envs.cli.hub:pull_command",
            "Download an environment bundle from the Hugging Face hub.",
        ),
        (
            "push",
            "awm_envs.cli.hub:push_command",
            "Upload an environment bundle to the Hugging Face hub.",
        ),
    ):
        add_lazy(envs, name, target, doc)
    cli.add_command(envs)
