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


class HiddenFact(BaseModel):
    """A fact only the user knows (an order number, which of two cards): the agent must ask.

    ``argument`` names the tool argument that carries it; a call passing ``value``
    there before the user has said it is a guess, and the communication check
    rejects the conversation even when the guess happens to be right.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="What the fact is, e.g. 'order number'.")
    value: str = Field(min_length=1, description="The fact as the user would say it.")
    argument: str | None = Field(
        default=None, description="The tool argument that carries it (the no-guessing check)."
    )


class SpokenFact(BaseModel):
    """Something the agent must tell the user; ``pattern`` is searched in its messages to them.

    The pattern is a regular expression matched case-insensitively, so ``39\\.95``
    accepts "$39.95" and "39.95 dollars" alike.
    """

    model_config = ConfigDict(extra="forbid")

    fact: str = Field(min_length=1, description="The fact in words (shown to the judge).")
    pattern: str = Field(min_length=1, description="A regex the agent's messages must match.")


class AgentMessage(BaseModel):
    """A scripted agent turn addressed to the user, placed among a solution's tool calls.

    ``after_calls`` is how many of the solution's tool calls come before it (0: before
    the first call), so a reference conversation is its tool calls plus these turns.
    """

    model_config = ConfigDict(extra="forbid")

    after_calls: int = Field(ge=0)
    text: str = Field(min_length=1)


class UserSection(BaseModel):
    """A conversational task's user: who they are, what they want and what only they know.

    The agent receives only ``opening``; a user simulator
    (:mod:`awm_core.user_sim`) plays the rest from ``goal``, ``persona``,
    ``hidden_facts``, ``accepts``, ``refuses`` and ``ends_when``, and ends the
    conversation with :data:`awm_core.user_sim.STOP_TOKEN`. ``replies`` are the
    scripted user's turns (one per agent message) for the reference conversation,
    whose agent turns are ``reference_messages``. ``must_tell`` and
    ``confirm_before`` are the communication checks decided by code.
    """

    model_config = ConfigDict(extra="forbid")

    opening: str = Field(min_length=1, description="The first message; all the agent is given.")
    goal: str = Field(min_length=1, description="What the user wants done, in their words.")
    persona: str = ""
    hidden_facts: list[HiddenFact] = Field(default_factory=list)
    accepts: list[str] = Field(default_factory=list, description="What the user agrees to.")
    refuses: list[str] = Field(default_factory=list, description="What the user turns down.")
    ends_when: str = Field(default="", description="When the user ends the conversation.")
    replies: list[str] | None = Field(
        default=None, description="The scripted user's replies, one per agent message."
    )
    reference_messages: list[AgentMessage] = Field(
        default_factory=list, description="The reference agent's turns to the user."
    )
    must_tell: list[SpokenFact] = Field(
        default_factory=list, description="Facts the agent must tell the user."
    )
    confirm_before: list[str] = Field(
        default_factory=list,
        description="Tools the agent may call only after the user confirmed (asked, then answered).",
    )


class NegativeExample(BaseModel):
    """A plausible wrong attempt that the task's verifier must reject (proves it is not lenient).

    On a conversational task ``messages`` are the attempt's turns to the user (placed
    among ``solution`` like :attr:`UserSection.reference_messages`) and ``replies``
    the scripted user's answers (the task's replies when None).
    """

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    solution: list[ToolCallStep] = Field(default_factory=list)
    final_answer: str | None = None
    messages: list[AgentMessage] | None = None
    replies: list[str] | None = None


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
    user: UserSection | None = Field(
        default=None,
        description="Makes the task conversational: the agent gets only user.opening.",
    )

    @property
    def conversational(self) -> bool:
        """Whether the agent talks to a (simulated) user instead of reading ``instruction``."""
        return self.user is not None
