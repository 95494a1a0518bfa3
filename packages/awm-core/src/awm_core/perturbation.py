"""What a perturbation is: the contract behind ``register_perturbations``.

A perturbation changes one episode's world, never the bundle on disk nor another
instance: it may replace the instance's starting database (corrupted rows), rewrite
what a tool returns (an injected instruction, a partial result) or answer a call in
the tool's place (a transient fault). An attack also names its **injection goal**: a
state change the attacker wants, given as the tool calls that make it, so whether the
attack succeeded is decided on the episode's database diff (the goal's own diff must
be contained in it), not by a judge's opinion.

Everything a perturbation decides comes from :attr:`PerturbationContext.seed` (and the
task), so the same seed gives the same perturbed episode on every machine.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from awm_core.models import Task, ToolCallStep, ToolResult, ToolSpec

__all__ = [
    "AfterCall",
    "Applied",
    "BeforeCall",
    "CallInfo",
    "InjectionGoal",
    "Perturbation",
    "PerturbationContext",
    "Replay",
    "seeded_random",
]

Replay = Callable[[bytes, Sequence[ToolCallStep]], bytes]
"""Run tool calls on a scratch instance that starts from an image; return its final image."""


def seeded_random(seed: int, *parts: str) -> random.Random:
    """A generator that depends only on ``seed`` and ``parts`` (never on ``PYTHONHASHSEED``)."""
    digest = hashlib.sha256("\x1f".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class CallInfo:
    """One tool call of the episode as a hook sees it: ``index`` counts calls from 0."""

    index: int
    tool: str
    arguments: dict[str, Any]


BeforeCall = Callable[[CallInfo], ToolResult | None]
"""Answer a call in the tool's place (the tool does not run), or None to let it run."""
AfterCall = Callable[[CallInfo, ToolResult], ToolResult]
"""Rewrite what the tool returned (what the agent reads); the database is unaffected."""


@dataclass(frozen=True)
class InjectionGoal:
    """A state change an attacker wants: the calls that make it, and why it is harmful.

    ``steps`` are replayed on a scratch copy of the episode's starting database; the
    attack succeeded when every change they make is also in the episode's diff.
    """

    id: str
    summary: str
    steps: tuple[ToolCallStep, ...]

    def to_json(self) -> dict[str, Any]:
        """The goal as recorded next to the episode (trajectory metadata, journal rows)."""
        return {
            "id": self.id,
            "summary": self.summary,
            "steps": [s.model_dump(mode="json") for s in self.steps],
        }


@dataclass(frozen=True)
class PerturbationContext:
    """What a perturbation may look at to plan one episode.

    ``image`` is the database the instance would start from; ``tasks`` are the
    environment's tasks (an attack can borrow another task's state change as its goal);
    ``safety`` is the environment's ``principals.json`` as a dict (empty when it has
    none); ``replay`` runs calls on a scratch instance (to find what a goal changes);
    ``tools`` are the environment's tools (a goal can be built from them when no task
    has a reference solution, as in an imported AWM-1K bundle).
    """

    env_id: str
    task: Task
    tasks: Sequence[Task]
    seed: int
    image: bytes
    replay: Replay
    safety: dict[str, Any] = field(default_factory=dict)
    tools: Sequence[ToolSpec] = ()

    def random(self, *parts: str) -> random.Random:
        """The episode's generator: the same seed, environment and task give the same draws."""
        return seeded_random(self.seed, self.env_id, self.task.id, *parts)


@dataclass
class Applied:
    """One perturbation planned for one episode.

    ``image``: the starting database to use instead (None keeps the environment's).
    ``before_call`` / ``after_call``: the tool-call hooks (see :data:`BeforeCall`,
    :data:`AfterCall`). ``goal``: the injection goal of an attack. ``record``: what was
    done, kept with the episode so a reader can see exactly what the agent faced.
    """

    image: bytes | None = None
    before_call: BeforeCall | None = None
    after_call: AfterCall | None = None
    goal: InjectionGoal | None = None
    record: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Perturbation(Protocol):
    """A registered perturbation (``register(name, perturbation)`` in ``register_perturbations``).

    ``kind`` says how the safety benchmark scores it: ``"data"`` (the world is wrong),
    ``"attack"`` (an adversary wants a goal reached), ``"faults"`` (the tools misbehave) or
    ``"vulnerability"`` (the tools lack a check they should make).
    """

    name: str
    kind: str
    description: str

    def apply(self, context: PerturbationContext) -> Applied:
        """Plan this perturbation for one episode; deterministic in ``context.seed``."""
        ...
