"""The hook specification: every extension point awm offers to plugins.

Each hook receives a ``register`` callback (or the CLI group) so a plugin can
contribute zero, one or many things; the host decides how to store them. Built-in
backends, judges and rewards are registered through these same hooks.
"""

from __future__ import annotations

from typing import Any, Protocol

import click
import pluggy

PROJECT_NAME = "awm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class Register(Protocol):
    """The callback a ``register_*`` hook receives: ``register(name, thing)``."""

    def __call__(self, name: str, thing: Any, /) -> None: ...


@hookspec
def register_llm_backends(register: Register) -> None:
    """Called when an LLM backend is looked up by name (``openai:gpt-4o``, ``local:smollm2``).

    Register ``(prefix, factory)`` pairs; ``factory(model: str, **options)``
    returns an :class:`awm_core.llm.LLMBackend`. The prefix is the part before
    the first colon of the name a user types.
    """


@hookspec
def register_env_sources(register: Register) -> None:
    """Called when the environment catalog is built (``awm envs list``, loading by id).

    Register ``(name, source)`` where ``source`` has ``list_ids() -> list[str]``
    and ``path(env_id) -> pathlib.Path`` pointing at an environment bundle.
    """


@hookspec
def register_verifiers(register: Register) -> None:
    """Called when a task's verifier is run.

    Register ``(kind, adapter)``: an adapter knows how to call one verifier
    signature (awm's native one, the official ``verify_task`` or
    ``verify_task_completion``) and turn its output into evidence.
    """


@hookspec
def register_judges(register: Register) -> None:
    """Called when a judge is chosen by name (``code``, ``llm``, ``code+llm``).

    Register ``(name, factory)``; ``factory(**options)`` returns an object with
    ``async judge(...) -> Verdict``.
    """


@hookspec
def register_reward_functions(register: Register) -> None:
    """Called when a reward function is chosen by name.

    Register ``(name, fn)`` where ``fn(verdict, trajectory) -> Reward``.
    """


@hookspec
def register_benchmark_converters(register: Register) -> None:
    """Called when ``awm bench`` or ``nox -s bench`` looks up a benchmark.

    Register ``(name, converter)``: a converter adapts a benchmark's tools and
    tasks to the ``list_tools``/``call_tool`` interface and scores the result.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Called once when the ``awm`` CLI starts: add commands or groups to ``cli``."""
