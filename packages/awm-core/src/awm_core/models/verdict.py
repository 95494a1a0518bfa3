"""The judge's verdict on a trajectory, and the reward derived from it."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class VerdictLabel(StrEnum):
    """The paper's four judge classes."""

    COMPLETED = "Completed"
    PARTIALLY_COMPLETED = "Partially Completed"
    AGENT_ERROR = "Agent Error"
    ENVIRONMENT_ERROR = "Environment Error"


class Verdict(BaseModel):
    """A judge's decision with its reasoning and the evidence it saw."""

    model_config = ConfigDict(extra="forbid")

    label: VerdictLabel
    reasoning: str = ""
    judge: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)


class Reward(BaseModel):
    """A scalar reward plus the named parts it was composed from."""

    model_config = ConfigDict(extra="forbid")

    value: float
    reason: str = ""
    components: dict[str, float] = Field(default_factory=dict)
