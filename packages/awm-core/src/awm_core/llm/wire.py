"""Conversions between awm's chat models and the OpenAI chat-completions wire format.

Both directions live here because both ends are ours: the OpenAI backend sends
:class:`Message` objects and reads completions, while the scripted server and
``awm serve-llm`` read requests and write completions. Keeping them in one
module keeps the two ends symmetric.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from awm_core.llm.base import ChatResponse
from awm_core.models import Message, TokenUsage, ToolCall

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


def split_reasoning(text: str) -> tuple[str | None, str]:
    """Split ``<think>...</think>`` blocks off ``text``: ``(reasoning, rest)``.

    An unclosed ``<think>`` (a model cut off by ``max_tokens``) counts as
    reasoning up to the end. A lone ``</think>`` with no opening tag (some chat
    templates put ``<think>`` in the prompt) makes everything before it
    reasoning. Returns ``None`` for reasoning when there is no think block.
    """
    if "<think>" not in text:
        if "</think>" in text:
            before, _, after = text.partition("</think>")
            return before.strip(), after.strip()
        return None, text
    parts = [m.group(1).strip() for m in _THINK.finditer(text)]
    rest = _THINK.sub("", text).strip()
    return "\n".join(p for p in parts if p), rest


def _content_text(content: Any) -> str:
    """OpenAI content may be a string, ``None`` or a list of typed parts; keep the text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict)
        )  # images and audio have no place in a text-only environment
    return str(content)


def decode_arguments(raw: Any) -> dict[str, Any]:
    """Arguments arrive as a JSON string (OpenAI) or an object (some servers); return a dict.

    Raises ``ValueError`` when the string is not a JSON object, so callers can
    turn it into their own typed error.
    """
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"tool arguments must be a JSON object, got {type(value).__name__}")
    return value


def message_to_openai(message: Message) -> dict[str, Any]:
    """One :class:`Message` as an OpenAI request message."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for i, call in enumerate(message.tool_calls)
        ]
    if message.role == "tool" and message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    if message.name and message.role != "tool":
        out["name"] = message.name
    return out


def message_from_openai(data: dict[str, Any]) -> Message:
    """One OpenAI request message as a :class:`Message` (unknown fields are dropped)."""
    calls = []
    for i, raw in enumerate(data.get("tool_calls") or []):
        fn = raw.get("function", {})
        try:
            args = decode_arguments(fn.get("arguments"))
        except ValueError:
            args = {"_raw": fn.get("arguments")}
        calls.append(
            ToolCall(id=raw.get("id") or f"call_{i}", name=fn.get("name", ""), arguments=args)
        )
    role = data.get("role", "user")
    if role == "developer":  # newer OpenAI clients send the system prompt under this name
        role = "system"
    return Message(
        role=role,
        content=_content_text(data.get("content")),
        reasoning=data.get("reasoning_content") or data.get("reasoning"),
        tool_calls=calls,
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
    )


def completion_to_openai(response: ChatResponse, *, model: str) -> dict[str, Any]:
    """A :class:`ChatResponse` as an OpenAI ``chat.completion`` object.

    Reasoning goes out as ``reasoning_content`` (the vLLM/SGLang convention), so
    a client that separates it gets it back unchanged.
    """
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.reasoning is not None:
        message["reasoning_content"] = response.reasoning
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in response.tool_calls
        ]
    finish = response.finish_reason or ("tool_calls" if response.tool_calls else "stop")
    usage = response.usage
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model or model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


def completion_from_openai(data: dict[str, Any], *, latency_s: float = 0.0) -> ChatResponse:
    """An OpenAI ``chat.completion`` (as a dict) as a :class:`ChatResponse`.

    Reasoning is taken from ``reasoning_content`` / ``reasoning`` when the server
    separates it, otherwise from ``<think>`` blocks in the content. Native tool
    calls with undecodable arguments keep the raw string under ``_raw`` so the
    format checker can report them instead of this function guessing.
    """
    choices = data.get("choices") or []
    if not choices:
        from awm_core.llm.base import LLMError

        raise LLMError(f"the server answered without choices: {json.dumps(data)[:300]}")
    choice = choices[0]
    msg = choice.get("message") or {}
    content = _content_text(msg.get("content"))
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    think, rest = split_reasoning(content)
    if think is not None:
        reasoning = "\n".join(p for p in (reasoning, think) if p)
        content = rest
    calls = message_from_openai(
        {"role": "assistant", "tool_calls": msg.get("tool_calls")}
    ).tool_calls
    raw_usage = data.get("usage") or {}
    return ChatResponse(
        content=content,
        reasoning=reasoning,
        tool_calls=calls,
        usage=TokenUsage(
            prompt_tokens=int(raw_usage.get("prompt_tokens") or 0),
            completion_tokens=int(raw_usage.get("completion_tokens") or 0),
        ),
        latency_s=latency_s,
        model=data.get("model") or "",
        finish_reason=choice.get("finish_reason"),
    )
