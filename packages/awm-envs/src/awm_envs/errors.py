"""Typed errors of awm-envs, each with a message that says what to do next."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from awm_core.errors import AWMError


@dataclass(frozen=True)
class BundleProblem:
    """One thing wrong with a bundle: which file, which field (or statement/route), and why."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


class BundleError(AWMError):
    """A bundle folder is not a valid environment; lists *every* problem found, not the first."""

    def __init__(self, path: Path | str, problems: list[BundleProblem]) -> None:
        self.path = Path(path)
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"environment bundle {self.path} has {len(self.problems)} problem(s):\n{lines}"
        )


class EnvironmentNotFoundError(AWMError):
    """An environment id is neither a bundle folder nor in any registered catalog."""

    def __init__(self, ref: str, known: list[str]) -> None:
        self.ref = ref
        self.known = sorted(known)
        choices = ", ".join(self.known) or "none"
        super().__init__(
            f"no environment {ref!r}: not a bundle folder and not in any catalog "
            f"(known ids: {choices}). Pass a folder path, --catalog DIR, or set AWM_ENV_PATH."
        )


class InstanceClosedError(AWMError):
    """A closed instance (or one whose pool is gone) was used."""


class PoolClosedError(AWMError):
    """An :class:`~awm_envs.pool.envpool.EnvPool` or worker pool was used after ``close()``."""


class SyncCallError(AWMError):
    """A ``*_sync`` method of a remote instance was called where it cannot wait for its pool."""


class JudgeUnavailableError(AWMError):
    """The judge that decides evidence-only verifiers (``--judge-model``) cannot be built."""

    def __init__(self, judge: str, model: str, reason: str) -> None:
        self.judge = judge
        self.model = model
        super().__init__(
            f"cannot use the {judge} judge with model {model!r}: {reason}. Deciding AWM-1K "
            "sql-mode tasks needs awm-verify installed (it registers the judge) and a "
            "backend spec that works (e.g. openai:gpt-4o with OPENAI_API_KEY, or "
            "OPENAI_BASE_URL pointing at a local endpoint such as `awm serve-llm`)"
        )


class JudgeFailedError(AWMError):
    """The judge model gave no usable label for a trajectory (failed, or kept answering badly)."""

    def __init__(self, model: str, reason: str) -> None:
        self.model = model
        super().__init__(f"the judge model {model} gave no usable label: {reason}")


class PrincipalsError(AWMError):
    """A bundle's ``principals.json`` (who owns which rows) is not valid."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = Path(path)
        super().__init__(
            f"{self.path}: {problem}. See docs/safety.md for the format "
            "(acting, owned: {table: {key, owner}}, irreversible_tools, injection_goals)."
        )


class PerturbationError(AWMError):
    """A perturbation cannot be applied to an episode (say, an attack with no goal to pursue)."""
