"""What a plugin implements, for every kind of thing awm looks up by name.

A plugin that adds an LLM backend, an environment source, a verifier signature,
a judge, a reward function or a benchmark converter types against this module
and depends on awm-core alone. The registry (:mod:`awm_core.registry`) checks
each registration against these protocols, so a wrong object fails when its
plugin registers it, with the plugin's name, not later at a lookup far away.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from awm_core.dbdiff import DatabaseDiff
from awm_core.llm.base import LLMBackend
from awm_core.models import Reward, Task, Trajectory, Verdict, VerifierResult
from awm_core.session import EnvSession

__all__ = [
    "BackendFactory",
    "BenchmarkConverter",
    "CallStyle",
    "EnvSource",
    "Judge",
    "JudgeFactory",
    "JudgeRequest",
    "LLMBackend",
    "RewardFunction",
    "SessionSource",
    "VerifierSignature",
]

# --------------------------------------------------------------------------- LLM backends

BackendFactory = Callable[..., LLMBackend]
"""``factory(model: str, **options) -> LLMBackend``, registered under a prefix (``openai``)."""

# --------------------------------------------------------------------------- environments


@runtime_checkable
class EnvSource(Protocol):
    """Where environments come from: ids and the bundle folder of each."""

    def list_ids(self) -> list[str]:
        """The environment ids this source offers."""
        ...

    def path(self, env_id: str) -> Path:
        """The bundle folder of ``env_id``; ``KeyError`` when this source does not have it."""
        ...


@runtime_checkable
class SessionSource(EnvSource, Protocol):
    """A source that can also open a live session (what ``awm run --env ID`` needs)."""

    def open_session(self, env_id: str) -> EnvSession | Awaitable[EnvSession]:
        """A fresh, isolated session on ``env_id``."""
        ...

    def tasks(self, env_id: str) -> Iterable[Task]:
        """The tasks shipped with ``env_id``."""
        ...


# --------------------------------------------------------------------------- verification

CallStyle = Literal["connections", "paths"]


@runtime_checkable
class VerifierSignature(Protocol):
    """How to call one verifier convention (awm's native one, the official ones) and read its output."""

    @property
    def name(self) -> str:
        """The name it is registered under."""
        ...

    @property
    def call_style(self) -> CallStyle:
        """``connections`` (read-only sqlite3 connections) or ``paths`` (file copies)."""
        ...

    @property
    def passes_final_answer(self) -> bool:
        """Whether the third argument is the agent's final answer."""
        ...

    @property
    def priority(self) -> int:
        """Order in which signatures are tried; lower first."""
        ...

    def matches(self, function_name: str, params: list[str]) -> bool:
        """Whether a function with this name and these parameter names uses this convention."""
        ...

    def interpret(self, raw: Any) -> tuple[bool | None, dict[str, Any]]:
        """Return ``(complete, evidence)``; ``complete`` is None when only a judge can decide."""
        ...


@dataclass(frozen=True)
class JudgeRequest:
    """Everything a judge may look at for one episode."""

    task: Task
    trajectory: Trajectory
    verification: VerifierResult | None = None
    diff: DatabaseDiff | None = None


@runtime_checkable
class Judge(Protocol):
    """Turns an episode into a verdict (Completed / Partially Completed / Agent Error / Environment Error)."""

    name: str

    async def judge(self, request: JudgeRequest) -> Verdict:
        """Return the verdict on one episode."""
        ...


JudgeFactory = Callable[..., Judge]
"""``factory(**options) -> Judge``; a judge class is a factory."""


class RewardFunction(Protocol):
    """Turns a verdict (and the trajectory it judged) into a scalar reward."""

    def __call__(self, verdict: Verdict | None, trajectory: Trajectory | None) -> Reward: ...


# --------------------------------------------------------------------------- benchmarks


@runtime_checkable
class BenchmarkConverter(Protocol):
    """Brings an external benchmark (BFCLv3, τ²-bench, MCP-Universe, ...) into awm.

    ``convert`` writes the benchmark's cases as awm bundles, so that the same agent
    loop, verifiers and rewards run on them as on awm's own environments.
    """

    name: str

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write up to ``limit`` cases as bundles under ``dest``; return their folders."""
        ...
