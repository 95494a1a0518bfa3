"""Chat messages and tool calls, in a form every backend and format converts to."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """A parsed call: ``name`` and decoded JSON ``arguments``."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """One chat message. ``reasoning`` holds ``<think>`` text kept apart from ``content``."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
