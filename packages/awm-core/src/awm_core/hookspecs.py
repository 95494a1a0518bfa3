"""The hook specification: every extension point awm offers to plugins.

Each hook receives a ``register`` callback (or the CLI group) so a plugin can
contribute zero, one or many things; the host decides how to store them. Built-in
backends, judges and rewards are registered through these same hooks. What each
registered thing must implement is in :mod:`awm_core.contracts`; the registry
checks it at registration and names the plugin when it does not.
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
    returns an :class:`awm_core.contracts.LLMBackend`. The prefix is the part before
    the first colon of the name a user types.
    """


@hookspec
def register_env_sources(register: Register) -> None:
    """Called when the environment catalog is built (``awm envs list``, loading by id).

    Register ``(name, source)``: an :class:`awm_core.contracts.EnvSource`
    (``list_ids()`` and ``path(env_id)``, the bundle folder); a
    :class:`awm_core.contracts.SessionSource` can also open sessions.
    """


@hookspec
def register_verifier_signatures(register: Register) -> None:
    """Called when a task's verifier is run.

    Register ``(name, signature)``: a :class:`awm_core.contracts.VerifierSignature`
    knows how to call one verifier convention (awm's native one, the official
    ``verify_task`` or ``verify_task_completion``) and turn its output into evidence.
    """


@hookspec
def register_judges(register: Register) -> None:
    """Called when a judge is chosen by name (``code``, ``llm``, ``code+llm``).

    Register ``(name, factory)``; ``factory(**options)`` returns an
    :class:`awm_core.contracts.Judge`.
    """


@hookspec
def register_reward_functions(register: Register) -> None:
    """Called when a reward function is chosen by name.

    Register ``(name, fn)``: an :class:`awm_core.contracts.RewardFunction`,
    ``fn(verdict, trajectory) -> Reward``.
    """


@hookspec
def register_user_simulators(register: Register) -> None:
    """Called when a conversational task's user simulator is chosen by name (``scripted``, ``llm``).

    Register ``(name, factory)``; ``factory(task, **options)`` returns an
    :class:`awm_core.contracts.UserSimulator` that plays the task's user.
    """


@hookspec
def register_benchmarks(register: Register) -> None:
    """Called when ``awm bench list|run`` or ``nox -s bench`` looks up a benchmark.

    Register ``(name, benchmark)``: an :class:`awm_core.contracts.Benchmark`
    (``available()``, ``convert(dest, limit=)`` and ``run(config)``).
    """


@hookspec
def register_perturbations(register: Register) -> None:
    """Called when ``awm bench safety`` (or anything else) looks up a perturbation by name.

    Register ``(name, perturbation)``: an :class:`awm_core.perturbation.Perturbation`
    (``kind``, ``description`` and ``apply(context) -> Applied``), which changes one
    episode's instance (its database, what its tools return) and never the bundle.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Called once when the ``awm`` CLI starts: add commands or groups to ``cli``.

    ``cli`` is an :class:`awm_core.lazycli.LazyGroup`: ``cli.add_lazy_command(name,
    "module:attr", help)`` imports the command only when it runs.
    """
