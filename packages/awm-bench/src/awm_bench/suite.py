"""What ``awm bench run`` needs of a benchmark beyond conversion: run it, in its modes.

A benchmark plugin registers one object through ``register_benchmark_converters``;
it satisfies :class:`awm_core.contracts.BenchmarkConverter` (``convert``) and, to be
runnable by ``awm bench run`` and ``nox -s bench``, this protocol as well. The
benchmark's own package is optional (an extra of awm-bench): ``available()`` says
what to install when it is missing, and nothing imports it before ``run``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from awm_core.errors import AWMError

MODES = ("awm", "native")
"""``native``: the benchmark's own harness and prompts, the model behind an
OpenAI-compatible endpoint; ``awm``: its tasks and tools behind list_tools/call_tool
in awm's episode loop."""

Progress = Callable[[str, int, int], None]
"""``progress(label, done, total)``, called as cases finish."""


class BenchmarkUnavailableError(AWMError):
    """The benchmark's package is not installed; the message says what to install."""


class UnknownSubsetError(AWMError, ValueError):
    """``--only`` names a category, domain or environment the benchmark does not have."""


@dataclass(frozen=True)
class SuiteConfig:
    """One run of one benchmark.

    ``model``: ``oracle`` (the benchmark's ground truth, to prove the converter) or an
    awm backend spec (``openai:NAME``, ``local:smollm2``). ``limit``: cases per
    category in the default offline subset; ``full`` runs everything. ``corruption``
    breaks the oracle on purpose (tests prove a converter notices). ``only`` keeps
    these categories (BFCL), domains (tau2) or environments (tasks); ``trials``
    runs of each task give pass^1..pass^trials (tau2). ``tasks``: a benchmark's own
    task file or folder to run instead of the offline set (MCP-Universe).
    """

    out: Path
    model: str = "oracle"
    modes: tuple[str, ...] = MODES
    full: bool = False
    limit: int | None = None
    corruption: str | None = None
    max_steps: int = 20
    only: tuple[str, ...] = ()
    trials: int = 1
    user_model: str | None = None
    tasks: Path | None = None
    progress: Progress | None = None


@runtime_checkable
class BenchmarkSuite(Protocol):
    """A benchmark ``awm bench run`` can run (on top of ``convert``)."""

    name: str
    title: str
    modes: tuple[str, ...]

    def available(self) -> str | None:
        """None when it can run here; else what to install."""
        ...

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write up to ``limit`` cases under ``dest``; return their folders."""
        ...

    def run(self, config: SuiteConfig) -> dict[str, Any]:
        """Run, write ``config.out``, return the summary (also ``config.out/summary.json``)."""
        ...


def require(available: Callable[[], str | None]) -> None:
    """Raise :class:`BenchmarkUnavailableError` with a suite's ``available()`` install hint."""
    problem = available()
    if problem:
        raise BenchmarkUnavailableError(problem)
