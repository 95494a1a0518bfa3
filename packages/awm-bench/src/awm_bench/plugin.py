"""awm-bench's plugin: ``awm demo`` and ``awm bench ...``."""

from __future__ import annotations

import click

from awm_core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: click.Group) -> None:
    from awm_bench.cli import bench, demo

    cli.add_command(demo)
    cli.add_command(bench)
