"""What a plugin implements, for every kind of thing awm looks up by name.

A plugin that adds an LLM backend, an environment source, a verifier signature,
a judge, a reward function or a benchmark types against this module
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
from awm_core.llm.sampling import Sampling
from awm_core.models import Message, Reward, Task, Trajectory, Verdict, VerifierResult
from awm_core.session import EnvSession

__all__ = [
    "CODE_JUDGE",
    "DEFAULT_JUDGE",
    "BackendFactory",
    "BENCHMARK_MODES",
    "Benchmark",
    "BenchmarkConfig",
    "CallStyle",
    "EnvSource",
    "Judge",
    "JudgeFactory",
    "JudgeRequest",
    "LLMBackend",
    "Progress",
    "RewardFunction",
    "SessionSource",
    "UserSimulator",
    "UserSimulatorFactory",
    "VerifierSignature",
    "benchmark_sampling",
    "default_judge",
    "require_available",
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

DEFAULT_JUDGE = "code+llm"
"""The judge when none is named and a judge model is given: the paper's code-augmented judge."""

CODE_JUDGE = "code"
"""The judge that needs no model (the verifier's verdict alone); the default without one."""


def default_judge(model: str | None) -> str:
    """The judge to use when none is named: :data:`DEFAULT_JUDGE` given a judge model, else code.

    A judge that asks an LLM cannot be the default where no model is configured, so
    rollouts that take no model (``rollout_episode``, ``TaskEnv``, training, ``awm
    bench``) judge with :data:`CODE_JUDGE`, and commands that take one use this.
    """
    return DEFAULT_JUDGE if model else CODE_JUDGE


class RewardFunction(Protocol):
    """Turns a verdict (and the trajectory it judged) into a scalar reward."""

    def __call__(self, verdict: Verdict | None, trajectory: Trajectory | None) -> Reward: ...


# --------------------------------------------------------------------------- user simulators


@runtime_checkable
class UserSimulator(Protocol):
    """Plays a conversational task's user (see :mod:`awm_core.user_sim`)."""

    name: str

    async def reply(self, dialogue: list[Message]) -> str:
        """The user's next turn; ``dialogue`` is from the agent's side (``user``: the user's
        turns, the opening first; ``assistant``: the agent's messages to the user). A turn
        containing ``awm_core.conversation.STOP_TOKEN`` ends the conversation."""
        ...


UserSimulatorFactory = Callable[..., UserSimulator]
"""``factory(task, **options) -> UserSimulator``, registered under a name (``scripted``)."""


# --------------------------------------------------------------------------- benchmarks

BENCHMARK_MODES: tuple[str, ...] = ("awm", "native")
"""``native``: the benchmark's own harness and prompts, the model behind an
OpenAI-compatible endpoint; ``awm``: its tasks and tools behind list_tools/call_tool
in awm's episode loop."""

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``, called as cases finish."""


@dataclass(frozen=True)
class BenchmarkConfig:
    """One run of one benchmark (what ``awm bench run`` passes to :meth:`Benchmark.run`).

    ``model``: ``oracle`` (the benchmark's ground truth, to prove the converter) or an
    awm backend spec (``openai:NAME``, ``local:smollm2``). ``limit``: cases per
    category in the default offline subset; ``full`` runs everything. ``corruption``
    breaks the oracle on purpose (tests prove a converter notices). ``only`` keeps
    these categories (BFCL), domains (tau2) or environments (tasks); ``trials``
    runs of each task give pass^1..pass^trials (tau2). ``tasks``: a benchmark's own
    task file or folder to run instead of the offline set (MCP-Universe).
    ``max_steps``: the agent's step limit; None keeps each benchmark's own (τ² 200).
    ``handler``: the benchmark harness's own model handler for native mode, by name
    (BFCLv3: a bfcl-eval model name such as ``Qwen/Qwen3-8B-FC``, or a handler class);
    None keeps the benchmark's default.
    ``sampling``: what the model decodes with, the benchmark's own defaults (its
    ``sampling`` attribute) with the run's ``--temperature/--top-p/--max-tokens/--seed``
    over them; trial ``n`` samples with seed ``seed + n``.
    ``attack``: the benchmark's own prompt-injection attack by name (AgentDojo: one of
    its registry, ``none`` for utility only); None keeps the benchmark's default.
    """

    out: Path
    model: str = "oracle"
    modes: tuple[str, ...] = BENCHMARK_MODES
    full: bool = False
    limit: int | None = None
    corruption: str | None = None
    max_steps: int | None = None
    only: tuple[str, ...] = ()
    trials: int = 1
    user_model: str | None = None
    handler: str | None = None
    tasks: Path | None = None
    progress: Progress | None = None
    sampling: Sampling = Sampling()
    attack: str | None = None


@runtime_checkable
class Benchmark(Protocol):
    """An external benchmark (BFCLv3, τ²-bench, MCP-Universe, awm's own tasks) that
    ``awm bench run`` and ``nox -s bench`` run, in its modes.

    The benchmark's own package is optional: ``available()`` says what to install
    when it is missing, and nothing should import it before ``convert`` or ``run``
    (raise :class:`awm_core.errors.BenchmarkUnavailableError` there when it is
    missing; :class:`awm_core.errors.UnknownSubsetError` for an ``only`` it lacks).

    A benchmark may declare its own decoding defaults as a ``sampling`` attribute
    (a :class:`~awm_core.llm.sampling.Sampling`; see :func:`benchmark_sampling`).
    """

    name: str
    title: str
    modes: tuple[str, ...]

    def available(self) -> str | None:
        """None when it can run here; else what to install."""
        ...

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write up to ``limit`` cases under ``dest``, one folder each (an awm bundle, or
        the benchmark's own case files where its tools are not an app); return them."""
        ...

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        """Run, write ``config.out``, return the summary (also ``config.out/summary.json``)."""
        ...


def benchmark_sampling(benchmark: Benchmark, overrides: Sampling | None = None) -> Sampling:
    """The benchmark's declared decoding defaults (none declared: the backend's own),
    with every parameter ``overrides`` sets in their place."""
    declared = getattr(benchmark, "sampling", None)
    base = declared if isinstance(declared, Sampling) else Sampling()
    return base.override(overrides) if overrides else base


def require_available(benchmark: Benchmark) -> None:
    """Raise :class:`~awm_core.errors.BenchmarkUnavailableError` with the benchmark's
    ``available()`` install hint, when it cannot run here."""
    from awm_core.errors import BenchmarkUnavailableError

    problem = benchmark.available()
    if problem:
        raise BenchmarkUnavailableError(problem)
