"""What validating an environment finds: one check per replayed trajectory, per task, per environment."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from awm_core.models import Complexity


class TrajectoryCheck(BaseModel):
    """One replayed trajectory and what the verifier said about it."""

    kind: str = Field(
        description="initial | reference | dropped_last_write | wrong_answer | no_action | negative_example"
    )
    description: str
    tool_errors: list[str] = Field(default_factory=list)
    complete: bool
    expected_complete: bool
    verifier_error: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The verifier gave the expected verdict and did not fail itself."""
        return self.verifier_error is None and self.complete == self.expected_complete


class TaskValidation(BaseModel):
    """The validation of one task: the three properties and every trajectory behind them.

    ``proof`` is ``proven`` (all three hold), ``failed``, or ``unproven``: the task has no
    reference solution yet (imported from the AWM-1K release), so only the checks that need
    none ran (its verifier runs cleanly, the initial state is not already complete) and
    they passed. An unproven task is not a failure unless proof is required
    (``awm envs validate --require-proof``); ``awm envs prove`` looks for a reference.
    """

    env_id: str
    task_id: str
    complexity: Complexity
    reference_calls: int
    expects_refusal: bool = False
    complexity_ok: bool
    initial_not_complete: bool
    reference_complete: bool
    wrong_rejected: bool
    problems: list[str] = Field(default_factory=list)
    checks: list[TrajectoryCheck] = Field(default_factory=list)
    unproven: bool = Field(
        default=False, description="No reference solution: only the reference-free checks ran."
    )

    @property
    def proof(self) -> Literal["proven", "unproven", "failed"]:
        """``proven``, ``unproven`` (no reference yet, nothing wrong found) or ``failed``."""
        if self.problems or not self.initial_not_complete:
            return "failed"
        if self.unproven:
            return "unproven"
        ok = self.complexity_ok and self.reference_complete and self.wrong_rejected
        return "proven" if ok else "failed"

    @property
    def passed(self) -> bool:
        """Not failed: proven, or unproven with nothing wrong found."""
        return self.proof != "failed"

    @property
    def proven(self) -> bool:
        """All three properties shown, with a replayed reference solution."""
        return self.proof == "proven"


class EnvValidation(BaseModel):
    """The validation of one environment: its tasks, plus problems that stop all of them."""

    env_id: str
    path: str
    tasks: list[TaskValidation] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems and bool(self.tasks) and all(t.passed for t in self.tasks)
