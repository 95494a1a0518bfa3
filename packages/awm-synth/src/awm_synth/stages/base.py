"""What every per-scenario stage shares: its inputs, its checkpoint record, and the loop call."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from awm_core.models import Message, Scenario
from awm_synth.config import SynthConfig
from awm_synth.llm.accounting import StageStats
from awm_synth.llm.client import SynthLLM
from awm_synth.stages.correction import CheckResult, self_correct
from awm_synth.store.records import StageRecord

if TYPE_CHECKING:
    from awm_synth.checks.sandbox import CheckSandbox

T = TypeVar("T", bound=BaseModel)


@dataclass
class ScenarioContext:
    """One scenario's run: the LLM door, the configuration, and the artifacts made so far.

    ``sandbox`` runs the code and verifier checks out of process; None means
    the trusted in-process harness (``--trusted``).
    """

    scenario: Scenario
    llm: SynthLLM
    config: SynthConfig
    artifacts: dict[str, Any] = field(default_factory=dict)
    sandbox: CheckSandbox | None = None

    @property
    def name(self) -> str:
        return self.scenario.name


async def corrected_stage(
    ctx: ScenarioContext,
    stage: str,
    messages: list[Message],
    parse: Callable[[str], T],
    check: Callable[[T], CheckResult],
    tolerance: float,
    *,
    acheck: Callable[[T], Awaitable[CheckResult]] | None = None,
) -> StageRecord:
    """Run :func:`self_correct` for ``stage`` and turn the outcome into its checkpoint record.

    ``acheck``, when given, replaces ``check`` (an async check: a sandboxed one).
    """
    stats = StageStats()
    started = time.perf_counter()
    outcome = await self_correct(
        ctx.llm,
        stage=stage,
        scenario=ctx.name,
        messages=messages,
        parse=parse,
        check=check,
        stats=stats,
        tolerance=tolerance,
        max_attempts=ctx.config.max_attempts,
        acheck=acheck,
    )
    stats.wall_s = time.perf_counter() - started
    artifact = outcome.artifact
    return StageRecord(
        stage=stage,
        scenario=ctx.name,
        accepted=outcome.accepted,
        artifact=artifact.model_dump(mode="json") if artifact is not None else None,
        attempts=[a.record() for a in outcome.attempts],
        chosen_attempt=outcome.best.number,
        stats=stats,
    )
