"""The scale: the paper's three criteria, and one task's ratings as a judge gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CRITERIA = ("task_feasibility", "data_alignment", "toolset_completeness")
SHORT = {
    "task_feasibility": "feasibility",
    "data_alignment": "alignment",
    "toolset_completeness": "toolset",
}
DEFAULT_THRESHOLD = 3


class QualityScores(BaseModel):
    """A judge's answer for one task."""

    model_config = ConfigDict(extra="forbid")

    task_feasibility: int = Field(ge=1, le=5)
    data_alignment: int = Field(ge=1, le=5)
    toolset_completeness: int = Field(ge=1, le=5)
    reasoning: str


@dataclass
class TaskQuality:
    """One task's ratings (``None`` where the judge could not rate it) and why."""

    env_id: str
    task_id: str
    complexity: str
    expects_refusal: bool
    scores: dict[str, int | None]
    reasoning: str
    judge: str
    attempts: int = 1
    error: str | None = None
    malformed_replies: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)

    def below(self, threshold: int) -> list[str]:
        """The criteria scored under ``threshold``."""
        return [c for c, v in self.scores.items() if v is not None and v < threshold]

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "complexity": self.complexity,
            "expects_refusal": self.expects_refusal,
            "scores": self.scores,
            "reasoning": self.reasoning,
            "judge": self.judge,
            "attempts": self.attempts,
            "error": self.error,
            "malformed_replies": self.malformed_replies,
            "evidence": self.evidence,
        }
