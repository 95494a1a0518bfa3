"""An awm policy backed by token-level generation, recording every turn for training.

:func:`awm_core.episode.run_episode` hands the policy the context it would show
the model at inference (system prompt, first user message, first exchange, last
*w* turns: history-aware). The policy renders that context with the same chat
template as the local backend, generates on token ids, and keeps
``(prompt_ids, response_ids, log_probs)`` for the turn. One recorded turn is one
training row: its prompt is exactly what the model saw, its response exactly what
it produced, so tool results and the truncated history never carry loss.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from awm_core.llm import ChatResponse, LLMError
from awm_core.llm.chat_template import response_from_text, template_messages
from awm_core.models import Message, TokenUsage
from awm_core.toolcalls import ToolCallFormat
from awm_train.tokens import TokenGenerator

__all__ = ["TokenPolicy", "TokenTurn"]


@dataclass(frozen=True)
class TokenTurn:
    """One assistant turn as the model saw and produced it."""

    prompt_ids: list[int]
    response_ids: list[int]
    log_probs: list[float] | None
    generate_s: float
    stop_reason: str | None = None


class TokenPolicy:
    """``respond`` = chat template → token ids → :class:`TokenGenerator` → text → response.

    Use one per trajectory (its ``turns`` are that trajectory's rows).
    """

    def __init__(
        self,
        generator: TokenGenerator,
        tokenizer: Any,
        *,
        name: str = "token-policy",
        max_new_tokens: int = 512,
        temperature: float = 1.0,
        max_prompt_tokens: int | None = None,
        examples: Sequence[Message] = (),
    ) -> None:
        self.generator = generator
        self.examples = list(examples)
        self.tokenizer = tokenizer
        self._name = name
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.max_prompt_tokens = max_prompt_tokens
        self.turns: list[TokenTurn] = []

    @property
    def name(self) -> str:
        return self._name

    def prompt_ids(self, messages: list[Message], tools: list[dict[str, Any]] | None) -> list[int]:
        """The token ids the model is prompted with for ``messages`` (generation prompt added).

        ``examples`` (worked turns, e.g. one request and its tool call) go right after
        the system prompt: part of every prompt the model sees, never of a response,
        so they steer a small model's format without ever being trained on.
        """
        if self.examples:
            lead = 1 if messages and messages[0].role == "system" else 0
            messages = [*messages[:lead], *self.examples, *messages[lead:]]
        chat = template_messages(messages, tools)
        ids = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):  # transformers 5 returns an encoding
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        prompt = self.prompt_ids(messages, tools)
        if self.max_prompt_tokens is not None and len(prompt) > self.max_prompt_tokens:
            raise LLMError(
                f"the prompt has {len(prompt)} tokens, over max_prompt_tokens="
                f"{self.max_prompt_tokens}; raise it or lower the history window"
            )
        started = time.perf_counter()
        out = await self.generator.generate(
            prompt, max_new_tokens=self.max_new_tokens, temperature=self.temperature
        )
        elapsed = time.perf_counter() - started
        self.turns.append(
            TokenTurn(prompt, list(out.token_ids), out.log_probs, elapsed, out.stop_reason)
        )
        text = self.tokenizer.decode(out.token_ids, skip_special_tokens=True)
        response = response_from_text(text, tools)
        return response.model_copy(
            update={
                "usage": TokenUsage(
                    prompt_tokens=len(prompt), completion_tokens=len(out.token_ids)
                ),
                "latency_s": elapsed,
                "model": self._name,
                "finish_reason": response.finish_reason
                if out.stop_reason != "length"
                else "length",
            }
        )
