"""awm-bench's plugin: ``awm demo`` and ``awm bench ...``."""

from __future__ import annotations

import click

from awm_core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: click.Group) -> None:
    from awm_bench.cli import bench, demo
    from awm_bench.quality.cli import quality_command
    from awm_bench.safety_cli import safety_command
    from awm_bench.suite_cli import COMMANDS

    for command in (
        *COMMANDS,
        quality_command,
        safety_command,
    ):  # awm bench list | run | report | compare | quality | safety
        bench.add_command(command)
    cli.add_command(demo)
    cli.add_command(bench)
