"""What validating an environment finds: one check per replayed trajectory, per task, per environment."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, computed_field

from awm_core.models import Complexity
from awm_envs.errors import JudgeFailedError
from awm_envs.validation.judge import JudgeDecision

Decider = Literal["code", "judge", "undecided"]


class TrajectoryCheck(BaseModel):
    """One replayed trajectory and what the verifier (or, for evidence-only verifiers, the
    judge) said about it.

    ``decided_by`` is ``code`` when the verifier gave the verdict, ``judge`` when it
    only gathered evidence (AWM-1K sql mode) and the judge model decided (its
    label and reasoning are in ``judgement``), ``undecided`` when it only gathered
    evidence and no judge model was given: then ``complete`` means nothing.
    """

    kind: str = Field(
        description="initial | reference | dropped_last_write | wrong_answer | no_action | negative_example"
    )
    description: str
    tool_errors: list[str] = Field(default_factory=list)
    complete: bool
    expected_complete: bool
    verifier_error: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)
    decided_by: Decider = "code"
    judgement: JudgeDecision | None = None
    judge_error: str | None = None
    # the judge's decision while it is still being made (see settle())
    _pending: Future[JudgeDecision] | None = PrivateAttr(default=None)

    def await_judge(self, pending: Future[JudgeDecision]) -> None:
        """Leave the verdict to a judge decision under way; :meth:`settle` collects it."""
        self.decided_by = "judge"
        self.complete = False
        self._pending = pending

    def settle(self) -> None:
        """Wait for the judge's decision, if one is under way, and take its verdict
        (or, when the model gave no usable label, its error)."""
        if self._pending is None:
            return
        pending, self._pending = self._pending, None
        try:
            self.judgement = pending.result()
        except JudgeFailedError as exc:
            self.judge_error = str(exc)
            return
        self.complete = self.judgement.complete

    @property
    def undecided(self) -> bool:
        """The verifier gathered evidence only and no judge decided."""
        return self.decided_by == "undecided"

    @property
    def ok(self) -> bool:
        """A verdict was reached (by the verifier or the judge) and it is the expected one."""
        return (
            self.verifier_error is None
            and self.judge_error is None
            and not self.undecided
            and self.complete == self.expected_complete
        )


class TaskValidation(BaseModel):
    """The validation of one task: the three properties and every trajectory behind them.

    ``proof`` is ``proven`` (all three hold), ``failed``, ``unproven``: the task has no
    reference solution yet (imported from the AWM-1K release), so only the checks that need
    none ran (its verifier runs cleanly, the initial state is not already complete) and
    they passed, or ``undecided``: its verifier only gathers evidence (AWM-1K sql mode)
    and no judge model was given to decide (``notes`` says how). Unproven and undecided
    tasks are not failures unless proof is required (``awm envs validate
    --require-proof``); ``awm envs prove`` looks for a reference.
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
    notes: list[str] = Field(
        default_factory=list, description="What is not wrong but left open (how to decide it)."
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def decided_by(self) -> Decider:
        """``judge`` when a judge model decided any of the task's checks, ``undecided`` when
        one was left open, else ``code`` (its verifier gave every verdict)."""
        if any(c.undecided for c in self.checks):
            return "undecided"
        if any(c.decided_by == "judge" for c in self.checks):
            return "judge"
        return "code"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def judge_model(self) -> str | None:
        """The judge model that decided the task's checks, if one did."""
        return next((c.judgement.model for c in self.checks if c.judgement is not None), None)

    @property
    def proof(self) -> Literal["proven", "unproven", "undecided", "failed"]:
        """``proven``, ``unproven`` (no reference yet, nothing wrong found), ``undecided``
        (evidence only, no judge model given, nothing wrong found) or ``failed``."""
        if self.problems:
            return "failed"
        if self.decided_by == "undecided":
            return "undecided"
        if not self.initial_not_complete:
            return "failed"
        if self.unproven:
            return "unproven"
        ok = self.complexity_ok and self.reference_complete and self.wrong_rejected
        return "proven" if ok else "failed"

    @property
    def passed(self) -> bool:
        """Not failed: proven, or unproven or undecided with nothing wrong found."""
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
