"""JSON and structured output on top of any backend.

Servers differ in what ``response_format`` they honour (OpenAI and vLLM take a
JSON schema, others only ``json_object``, the local model none), so the answer
is always validated here: a backend that ignores the request still yields a
typed :class:`LLMOutputError` rather than a half-parsed object.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from awm_core.llm.base import LLMBackend, LLMOutputError
from awm_core.models import Message

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


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


def parse_json_text(text: str) -> Any:
    """Decode a JSON answer, tolerating a Markdown code fence around it."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1)
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise LLMOutputError(f"the model's answer is not JSON ({exc}): {text[:200]!r}") from exc


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
