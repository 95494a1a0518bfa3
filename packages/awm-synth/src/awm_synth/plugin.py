"""awm-synth's plugin: the ``replay`` LLM backend and the ``awm synth`` command group."""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_llm_backends(register: Register) -> None:
    from awm_synth.llm.replay import ReplayBackend

    register("replay", ReplayBackend.from_spec)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from awm_synth.cli import synth

    cli.add_command(synth)
