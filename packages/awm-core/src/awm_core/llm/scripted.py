"""A deterministic backend that answers from a script: for tests, replays and benchmarks.

It is a real backend (registered as ``scripted``), not a mock: the episode loop,
synthesis replay and the loop-overhead benchmark all drive it through the same
interface as a network model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from awm_core.llm.base import ChatResponse, LLMError
from awm_core.models import Message, TokenUsage

Responder = Callable[[list[Message]], str | ChatResponse]


class ScriptedBackend:
    """Returns the next scripted reply on each call.

    ``replies`` may be strings, :class:`ChatResponse` objects, or callables that
    look at the conversation and decide. When the script runs out it raises
    :class:`LLMError`, never returns an empty answer.
    """

    def __init__(
        self, replies: Sequence[str | ChatResponse | Responder], name: str = "scripted"
    ) -> None:
        self.name = name
        self._replies = list(replies)
        self.calls: list[list[Message]] = []

    @classmethod
    def from_spec(cls, model: str, **options: Any) -> ScriptedBackend:
        """``scripted:PATH`` reads a JSON list of replies; ``replies=[...]`` passes them directly."""
        replies = options.pop("replies", None)
        if replies is None:
            if not model:
                raise LLMError("scripted backend needs replies=[...] or scripted:PATH_TO_JSON")
            replies = json.loads(Path(model).read_text())
        return cls(replies, name=f"scripted:{model}" if model else "scripted")

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
        self.calls.append(list(messages))
        index = len(self.calls) - 1
        if index >= len(self._replies):
            raise LLMError(f"{self.name}: script exhausted after {len(self._replies)} replies")
        reply = self._replies[index]
        if callable(reply):
            reply = reply(list(messages))
        if isinstance(reply, ChatResponse):
            return reply
        prompt_chars = sum(len(m.content) for m in messages)
        return ChatResponse(
            content=reply,
            model=self.name,
            usage=TokenUsage(prompt_tokens=prompt_chars // 4, completion_tokens=len(reply) // 4),
            finish_reason="stop",
        )
