"""The backend protocol and name resolution (``openai:gpt-4o`` -> a backend object)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from awm_core.errors import AWMError, UnknownNameError
from awm_core.models import Message, TokenUsage, ToolCall
from awm_core.registry import collect


class LLMError(AWMError):
    """The backend could not produce an answer (after its retries, if it retries)."""


class ChatResponse(BaseModel):
    """One completion: text, separated reasoning, native tool calls, usage and latency."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None


@runtime_checkable
class LLMBackend(Protocol):
    """What every backend implements. ``name`` is the full spec it was built from."""

    name: str

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResponse:
        """Return the model's next message for ``messages``."""
        ...


def list_backends() -> list[str]:
    """Prefixes of every registered backend (``openai``, ``local``, ...)."""
    return sorted(collect("llm backend"))


def get_backend(spec: str, **options: Any) -> LLMBackend:
    """Build the backend named by ``spec`` (``PREFIX`` or ``PREFIX:MODEL``)."""
    prefix, _, model = spec.partition(":")
    factories = collect("llm backend")
    if prefix not in factories:
        raise UnknownNameError("llm backend", prefix, list(factories))
    backend: LLMBackend = factories[prefix](model, **options)
    return backend
