"""awm-train's plugin: the ``awm train`` command group and its training environments."""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl
from awm_core.lazycli import add_lazy


@hookimpl
def register_commands(cli: click.Group) -> None:
    # imported when used, so `awm --help` stays fast (awm_core.lazycli)
    add_lazy(
        cli,
        "train",
        "awm_train.cli:train",
        "Train agents with GRPO on awm environments (verl).",
    )


@hookimpl
def register_env_sources(register: Register) -> None:
    """Environments made for training experiments (``awm_train/envs/``), found by id.

    ``lights`` (three tools, tasks of one or two calls) is small enough for a
    learning curve on a CPU (the ``cpu-learn`` recipe); registering it as a
    source lets every node with awm-train load it by id, like the catalog.
    """
    from awm_envs import SessionFolderSource
    from awm_train.envs import ENVS_DIR

    register("training", SessionFolderSource(ENVS_DIR))
