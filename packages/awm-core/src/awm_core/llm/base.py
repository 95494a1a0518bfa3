"""The backend protocol and name resolution (``openai:gpt-4o`` -> a backend object)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from awm_core.errors import AWMError
from awm_core.models import Message, TokenUsage, ToolCall


class LLMError(AWMError):
    """The backend could not produce an answer (after its retries, if it retries)."""


class LLMConfigError(LLMError):
    """The backend is misconfigured (no model name, no API key, missing extra)."""


class LLMRequestError(LLMError):
    """The server rejected the request for a reason retrying cannot fix (400, 401, 404...)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMRetriesExhaustedError(LLMError):
    """Every attempt failed with a transient error (429, 5xx, connection, timeout)."""

    def __init__(self, message: str, *, attempts: int, last_status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_status = last_status


class LLMOutputError(LLMError):
    """The model answered, but not in the requested shape (JSON / structured output)."""


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
    attempts: int = Field(default=1, description="Requests it took, retries included.")


@dataclass
class BackendStats:
    """Totals a backend accumulates over its lifetime (for benchmarks and cost reports)."""

    calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    latency_s: float = 0.0
    usage: TokenUsage = field(default_factory=TokenUsage)

    def record(self, response: ChatResponse) -> None:
        """Add one successful call."""
        self.calls += 1
        self.retries += response.attempts - 1
        self.latency_s += response.latency_s
        self.usage = self.usage + response.usage


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
        top_p: float | None = None,
        seed: int | None = None,
    ) -> ChatResponse:
        """Return the model's next message for ``messages``.

        ``seed`` asks for reproducible sampling where the backend can give it; a
        backend that cannot honour ``top_p`` or ``seed`` ignores them.
        """
        ...
