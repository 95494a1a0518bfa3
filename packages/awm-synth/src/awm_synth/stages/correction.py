"""Execution-based self-correction: generate, execute, feed the errors back, keep the best.

A stage hands the loop three things: how to ask (the base conversation), how
to read an answer into an artifact, and how to execute that artifact into a
:class:`CheckResult`. The loop asks up to ``max_attempts`` times; after a
failed attempt the model sees its own previous answer and a summary of what
went wrong when it was executed. It stops at the first attempt within the
stage's tolerance, and otherwise keeps the attempt with the fewest errors, so
a late regression never replaces an earlier, better answer. An attempt that
is still over tolerance is reported as failed: the caller must not ship it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from awm_core.llm.base import LLMOutputError
from awm_core.models import Message
from awm_synth.llm.accounting import StageStats
from awm_synth.llm.client import SynthLLM
from awm_synth.llm.tags import RequestKey
from awm_synth.store.records import AttemptRecord

T = TypeVar("T")

MAX_FEEDBACK_ERRORS = 12


@dataclass
class CheckResult:
    """What executing one attempt's artifact found.

    ``failed``/``total`` count the stage's unit (tables, inserts, tools,
    tasks); ``fatal`` marks failures no tolerance covers (the answer did not
    parse, the app did not start). ``causes`` are short labels for the report.
    """

    total: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    fatal: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def error_rate(self) -> float:
        if self.fatal:
            return 1.0
        return self.failed / self.total if self.total else 0.0

    @property
    def ok(self) -> bool:
        return not self.fatal and self.failed == 0

    def add(self, cause: str, message: str) -> None:
        """Record one failing unit."""
        self.failed += 1
        self.causes.append(cause)
        self.errors.append(message)

    @classmethod
    def fatal_error(cls, cause: str, message: str) -> CheckResult:
        return cls(total=1, failed=1, errors=[message], causes=[cause], fatal=True)


@dataclass
class Attempt(Generic[T]):
    number: int
    raw: str
    artifact: T | None
    check: CheckResult

    def record(self) -> AttemptRecord:
        return AttemptRecord(
            number=self.number,
            total=self.check.total,
            failed=self.check.failed,
            error_rate=self.check.error_rate,
            fatal=self.check.fatal,
            causes=list(self.check.causes),
            errors=self.check.errors[:MAX_FEEDBACK_ERRORS],
            notes=list(self.check.notes),
        )


@dataclass
class CorrectionOutcome(Generic[T]):
    """The chosen attempt, every attempt's record, and whether the choice is good enough to ship."""

    best: Attempt[T]
    attempts: list[Attempt[T]]
    accepted: bool

    @property
    def artifact(self) -> T | None:
        return self.best.artifact


def choose_best(attempts: list[Attempt[T]]) -> Attempt[T]:
    """The attempt with the fewest errors: non-fatal first, then error rate, count, earliest."""
    return min(
        attempts,
        key=lambda a: (
            a.check.fatal or a.artifact is None,
            a.check.error_rate,
            a.check.failed,
            a.number,
        ),
    )


def feedback_message(attempt: Attempt[T], tolerance: float) -> str:
    """The summary the model reads after a failed attempt: what failed, when executed, and the bar."""
    check = attempt.check
    lines = [
        f"Your previous answer (attempt {attempt.number}) was executed and failed "
        f"{check.failed} of {max(check.total, 1)} checks"
        + (
            " (fatal: nothing can be kept)"
            if check.fatal
            else f" ({check.error_rate:.0%}; at most {tolerance:.0%} is tolerated)"
        )
        + ". The problems:"
    ]
    for error in check.errors[:MAX_FEEDBACK_ERRORS]:
        lines.append(f"- {error}")
    if len(check.errors) > MAX_FEEDBACK_ERRORS:
        lines.append(f"- ... and {len(check.errors) - MAX_FEEDBACK_ERRORS} more of the same kinds")
    lines.append(
        "Fix every problem and answer again with the complete corrected output, in the same "
        "format as before (not a diff, not only the changed parts)."
    )
    return "\n".join(lines)


async def self_correct(
    llm: SynthLLM,
    *,
    stage: str,
    scenario: str,
    messages: list[Message],
    parse: Callable[[str], T],
    check: Callable[[T], CheckResult],
    stats: StageStats,
    tolerance: float = 0.0,
    max_attempts: int = 5,
    acheck: Callable[[T], Awaitable[CheckResult]] | None = None,
) -> CorrectionOutcome[T]:
    """Run the generate-execute-repair loop for one stage of one scenario.

    ``check`` runs in a worker thread: executing SQL and importing generated
    apps must not stall the event loop that keeps other requests in flight.
    ``acheck``, when given, is awaited instead: a check that does its work in
    sandbox processes and only waits on them.
    """
    attempts: list[Attempt[T]] = []
    conversation = list(messages)
    for number in range(1, max_attempts + 1):
        response = await llm.ask(RequestKey(stage, scenario, number), conversation, stats)
        raw = response.content
        artifact: T | None = None
        try:
            artifact = parse(raw)
        except LLMOutputError as exc:  # ArtifactParseError included
            result = CheckResult.fatal_error("parse_error", str(exc))
        else:
            if acheck is not None:
                result = await acheck(artifact)
            else:
                result = await asyncio.to_thread(check, artifact)
        attempt = Attempt(number, raw, artifact, result)
        attempts.append(attempt)
        if artifact is not None and not result.fatal and result.error_rate <= tolerance:
            return CorrectionOutcome(attempt, attempts, accepted=True)
        # Keep the conversation short: the original request, the last answer, its errors.
        conversation = [
            *messages,
            Message(role="assistant", content=raw),
            Message(role="user", content=feedback_message(attempt, tolerance)),
        ]
    best = choose_best(attempts)
    accepted = (
        best.artifact is not None and not best.check.fatal and best.check.error_rate <= tolerance
    )
    return CorrectionOutcome(best, attempts, accepted=accepted)
