"""awm-train's plugin: the ``awm train`` command group."""

from __future__ import annotations

import click

from awm_core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: click.Group) -> None:
    from awm_train.cli import train

    cli.add_command(train)
