"""awm-core's own plugin: registered through the same hooks as any third party's.

Imports happen inside the hooks so that ``import awm_core`` stays cheap and the
optional extras (openai SDK use, torch, FastAPI) load only when used.
"""

from __future__ import annotations

from typing import Any

import click

from awm_core.hookspecs import Register, hookimpl
from awm_core.lazycli import add_lazy


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
def register_user_simulators(register: Register) -> None:
    from awm_core.user_sim import LLMUser, ScriptedUser

    register("scripted", ScriptedUser)
    register("llm", LLMUser.build)


@hookimpl
def register_commands(cli: click.Group) -> None:
    # imported when used, so `awm --help` stays fast (see awm_core.lazycli)
    add_lazy(
        cli,
        "run",
        "awm_core.run_command:run_command",
        "Run one episode of a model (or the reference solution).",
    )
    add_lazy(
        cli,
        "serve-llm",
        "awm_core.llm.serve:serve_llm_command",
        "Serve an awm LLM backend as an OpenAI-compatible endpoint.",
    )
    add_lazy(
        cli,
        "view",
        "awm_core.view_command:view_command",
        "Browse trajectories and their verdicts.",
    )
