"""awm-synth's plugin: the ``replay`` LLM backend and the ``awm synth`` command group."""

from __future__ import annotations

import click

from awm_core.hookspecs import Register, hookimpl
from awm_core.lazycli import add_lazy


@hookimpl
def register_llm_backends(register: Register) -> None:
    from awm_synth.llm.replay import ReplayBackend

    register("replay", ReplayBackend.from_spec)


@hookimpl
def register_commands(cli: click.Group) -> None:
    # imported when used, so `awm --help` stays fast (awm_core.lazycli)
    add_lazy(
        cli,
        "synth",
        "awm_synth.cli:synth",
        "Synthesise environments, self-correcting each stage.",
    )
