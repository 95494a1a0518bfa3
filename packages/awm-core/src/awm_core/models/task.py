"""Tasks: what the agent is asked to do in an environment, and how it is proven solvable."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Complexity(StrEnum):
    """Buckets by the number of tool calls a reference solution needs."""

    EASY = "easy"  # 1-2 calls
    MEDIUM = "medium"  # 3-5 calls
    HARD = "hard"  # 6-10 calls
    VERY_HARD = "very_hard"  # 11+ calls


def complexity_for_calls(n_calls: int) -> Complexity:
    """Map a reference solution's length onto the paper's complexity buckets."""
    if n_calls <= 2:
        return Complexity.EASY
    if n_calls <= 5:
        return Complexity.MEDIUM
    if n_calls <= 10:
        return Complexity.HARD
    return Complexity.VERY_HARD


class ToolCallStep(BaseModel):
    """One call of a reference solution: a tool name and its arguments."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class NegativeExample(BaseModel):
    """A plausible wrong attempt that the task's verifier must reject (proves it is not lenient)."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    solution: list[ToolCallStep] = Field(default_factory=list)
    final_answer: str | None = None


class Task(BaseModel):
    """A concrete, checkable instruction for an agent in one environment.

    ``reference_solution`` is a replayable list of tool calls; with
    ``reference_answer`` it proves the task solvable (``awm envs validate``).
    ``expects_refusal`` marks tasks whose right outcome is to change nothing and
    say why (the item does not exist, the action is not allowed).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    complexity: Complexity
    reference_solution: list[ToolCallStep] | None = None
    reference_answer: str | None = Field(
        default=None, description="The final answer a correct agent gives, for read-only tasks."
    )
    verifier: str | None = Field(
        default=None, description="Name of the verifier function in the bundle's verifiers module."
    )
    success_criteria: list[str] = Field(default_factory=list)
    failure_criteria: list[str] = Field(default_factory=list)
    expects_refusal: bool = False
    negative_examples: list[NegativeExample] = Field(
        default_factory=list,
        description="Hand-written wrong trajectories, checked in addition to generated ones.",
    )
    tags: list[str] = Field(default_factory=list)
