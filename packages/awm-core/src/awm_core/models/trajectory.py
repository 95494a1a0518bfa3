"""What an episode produced: messages, tool calls with results and timings, and why it ended."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_core.models.message import Message, ToolCall


class Termination(StrEnum):
    """Why an episode stopped."""

    FINAL_ANSWER = "final_answer"  # the model answered without a tool call
    MAX_STEPS = "max_steps"  # the step budget ran out
    FORMAT_ERROR = "format_error"  # a step-level format check failed (early termination)
    ENVIRONMENT_ERROR = "environment_error"  # the environment failed, not the agent
    MODEL_ERROR = "model_error"  # the LLM backend failed after its retries
    INTERRUPTED = "interrupted"  # the user stopped it (Ctrl-C); the steps so far are kept


class TokenUsage(BaseModel):
    """Token counts, summed over calls."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class ToolResult(BaseModel):
    """The environment's answer to one tool call."""

    model_config = ConfigDict(extra="forbid")

    content: Any = None
    is_error: bool = False
    error_type: str | None = Field(default=None, description="e.g. 'not_found', 'timeout'.")
    latency_s: float = 0.0


class StepRecord(BaseModel):
    """One assistant turn and, if it made one, its tool call and result."""

    model_config = ConfigDict(extra="forbid")

    index: int
    assistant: Message
    tool_call: ToolCall | None = None
    result: ToolResult | None = None
    model_latency_s: float = 0.0
    usage: TokenUsage = Field(default_factory=TokenUsage)
    violation: str | None = Field(default=None, description="Format check that failed here.")


class Trajectory(BaseModel):
    """A whole episode, serialisable to JSON for verification and training."""

    model_config = ConfigDict(extra="forbid")

    env_id: str
    task_id: str
    instruction: str = ""
    messages: list[Message] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    termination: Termination = Termination.FINAL_ANSWER
    termination_reason: str | None = None
    final_answer: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
