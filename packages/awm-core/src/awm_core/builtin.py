"""awm-core's own plugin: registered through the same hooks as any third party's.

Imports happen inside the hooks so that ``import awm_core`` stays cheap and the
optional extras (openai SDK use, torch, FastAPI) load only when used.
"""

from __future__ import annotations

from typing import Any

import click

from awm_core.hookspecs import Register, hookimpl


def _openai_factory(model: str, **options: Any) -> Any:
    from awm_core.llm.openai_backend import OpenAIBackend

    return OpenAIBackend.from_spec(model, **options)


def _local_factory(model: str, **options: Any) -> Any:
    from awm_core.llm.local_backend import LocalBackend

    return LocalBackend.from_spec(model, **options)


@hookimpl
def register_llm_backends(register: Register) -> None:
    from awm_core.llm.scripted import ScriptedBackend

    register("scripted", ScriptedBackend.from_spec)
    register("openai", _openai_factory)
    register("local", _local_factory)


@hookimpl
def register_commands(cli: click.Group) -> None:
    from awm_core.llm.serve import serve_llm_command
    from awm_core.run_command import run_command

    cli.add_command(run_command)
    cli.add_command(serve_llm_command)
