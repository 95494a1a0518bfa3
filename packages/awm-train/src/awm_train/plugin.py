"""awm-train's plugin: the ``awm train`` command group."""

from __future__ import annotations

import click

from awm_core.hookspecs import hookimpl
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
