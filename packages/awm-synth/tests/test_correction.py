"""The self-correction loop: feedback, stopping within tolerance, keeping the lowest-error attempt."""

from __future__ import annotations

import asyncio

from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Message
from awm_synth.errors import ArtifactParseError
from awm_synth.llm.accounting import StageStats
from awm_synth.llm.client import SynthLLM
from awm_synth.stages.correction import CheckResult, CorrectionOutcome, self_correct

BASE = [
    Message(role="system", content="count things"),
    Message(role="user", content="answer a number"),
]


def _parse(raw: str) -> int:
    if not raw.strip().isdigit():
        raise ArtifactParseError(f"not a number: {raw!r}")
    return int(raw)


def _check(value: int) -> CheckResult:
    """``value`` failing units out of 10."""
    result = CheckResult(total=10)
    for i in range(value):
        result.add("wrong", f"unit {i} is wrong")
    return result


def _run(
    replies: list[str], tolerance: float = 0.0, max_attempts: int = 5
) -> tuple[CorrectionOutcome[int], ScriptedBackend]:
    backend = ScriptedBackend(replies)
    outcome = asyncio.run(
        self_correct(
            SynthLLM(backend),
            stage="demo",
            scenario="s",
            messages=BASE,
            parse=_parse,
            check=_check,
            stats=StageStats(),
            tolerance=tolerance,
            max_attempts=max_attempts,
        )
    )
    return outcome, backend


def test_keeps_lowest_error_attempt_when_none_passes() -> None:
    outcome, _ = _run(["5", "2", "oops", "7", "3"])
    assert not outcome.accepted
    assert outcome.best.number == 2 and outcome.artifact == 2
    assert [a.check.failed for a in outcome.attempts] == [5, 2, 1, 7, 3]
    assert outcome.attempts[2].check.fatal  # the unparseable answer never wins


def test_stops_at_first_attempt_within_tolerance() -> None:
    outcome, backend = _run(["4", "1", "0"], tolerance=0.1)
    assert outcome.accepted and outcome.best.number == 2
    assert len(backend.calls) == 2


def test_feedback_carries_previous_answer_and_errors() -> None:
    _, backend = _run(["3", "0"])
    second = backend.calls[1]
    assert second[-2].role == "assistant" and second[-2].content == "3"
    assert "unit 0 is wrong" in second[-1].content and "attempt=2" in second[-1].content
    assert "attempt=1" in backend.calls[0][-1].content


def test_attempt_limit() -> None:
    outcome, backend = _run(["9"] * 10, max_attempts=3)
    assert len(backend.calls) == 3 and not outcome.accepted
