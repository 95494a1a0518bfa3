"""The checkpointed records of a stage: every attempt, the kept artifact, usage.

They live with the store (not with the stages that fill them) because checkpoints
and reports read them without running any stage.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_synth.llm.accounting import StageStats


class AttemptRecord(BaseModel):
    """One attempt as kept in the stage checkpoint and read by the report."""

    model_config = ConfigDict(extra="forbid")

    number: int
    total: int
    failed: int
    error_rate: float
    fatal: bool
    causes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class StageRecord(BaseModel):
    """A stage's checkpoint: the kept artifact, every attempt, usage, and whether it may ship."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    scenario: str
    accepted: bool
    artifact: dict[str, Any] | None = None
    attempts: list[AttemptRecord] = Field(default_factory=list)
    chosen_attempt: int = 0
    stats: StageStats = Field(default_factory=StageStats)
