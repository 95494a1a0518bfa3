"""JSON and structured output on top of any backend.

Servers differ in what ``response_format`` they honour (OpenAI and vLLM take a
JSON schema, others only ``json_object``, the local model none), so the answer
is always validated here: a backend that ignores the request still yields a
typed :class:`LLMOutputError` rather than a half-parsed object.

:func:`chat_until_valid` is the strict-JSON loop the judges share: a reply its
parser rejects is sent back with what was wrong, up to a number of attempts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from awm_core.llm.base import ChatResponse, LLMBackend, LLMOutputError
from awm_core.llm.extract import parse_json_text
from awm_core.models import Message

T = TypeVar("T", bound=BaseModel)
P = TypeVar("P")


def json_schema_format(model: type[BaseModel], *, strict: bool = True) -> dict[str, Any]:
    """``response_format`` asking for JSON that matches ``model``'s schema."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": model.__name__,
            "schema": model.model_json_schema(),
            "strict": strict,
        },
    }


async def chat_structured(
    backend: LLMBackend,
    messages: list[Message],
    model: type[T],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> T:
    """Ask for an answer shaped like ``model`` and return it validated."""
    response = await backend.chat(
        messages,
        temperature=temperature,
        max_tokens=max_tokens,
        response_format=json_schema_format(model),
    )
    data = parse_json_text(response.content)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise LLMOutputError(
            f"the model's JSON does not match {model.__name__}: {exc.errors()[:3]}"
        ) from exc


@dataclass
class Attempts:
    """What a :func:`chat_until_valid` call went through, readable even when it raised."""

    count: int = 0  # model calls made (a call that raised included)
    problems: list[str] = field(default_factory=list)  # why each rejected reply was rejected
    last_reply: str = ""


class UnusableAnswerError(LLMOutputError):
    """Every reply was rejected by the parser; ``attempts`` says why each one was."""

    def __init__(self, attempts: Attempts) -> None:
        super().__init__(
            f"no usable answer in {attempts.count} attempt(s); "
            f"last problem: {attempts.problems[-1]}"
        )
        self.attempts = attempts


async def chat_until_valid(
    chat: Callable[[list[Message]], Awaitable[ChatResponse]],
    messages: list[Message],
    parse: Callable[[str], P],
    *,
    max_attempts: int,
    answer_again: str,
    attempts: Attempts | None = None,
) -> tuple[P, Attempts]:
    """Ask until ``parse`` accepts the reply; a rejected reply goes back with what was wrong.

    ``parse`` raises ``ValueError`` saying what is wrong with a reply; that text,
    then ``answer_again`` (what to answer instead), is the next user message.
    After ``max_attempts`` rejections: :class:`UnusableAnswerError`. Errors of
    ``chat`` propagate; pass ``attempts`` to read the count and problems then.
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    record = attempts if attempts is not None else Attempts()
    for _ in range(max_attempts):
        record.count += 1
        reply = (await chat(messages)).content
        record.last_reply = reply
        try:
            return parse(reply), record
        except ValueError as exc:
            record.problems.append(str(exc))
            messages = [
                *messages,
                Message(role="assistant", content=reply),
                Message(role="user", content=f"That reply cannot be used: {exc}. {answer_again}"),
            ]
    raise UnusableAnswerError(record)
