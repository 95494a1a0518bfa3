"""Worked tool-call examples for small local models, built from the tools on offer.

SmolLM2-135M was never trained to call tools: asked zero-shot it answers in
prose (0 of 10 BFCL ``simple`` cases produced a ``<tool_call>``, in either the
Hermes format or the list format of SmolLM2's larger siblings). Two worked
examples fix the format, and examples made from the request's *own* tools work
far better than fixed ones, because a small model copies the names it has just
seen: measured on the first 10 BFCL ``simple`` cases, fixed weather/currency
examples gave 8 well-formed calls but 1 right tool name; examples built here
gave 7 well-formed calls and 4 right names.

The examples are prepended to the prompt at inference only. They are never part
of the messages a backend returns, so trajectories and training data do not
contain them.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ANSWER_INSTRUCTION", "echoes_tool_response", "worked_examples"]

# Asked, without tools, when a model answers a tool result by echoing one.
ANSWER_INSTRUCTION = (
    "Using the tool results above, reply to my request in plain text. Do not call a tool."
)

_SAMPLES: dict[str, Any] = {"integer": 3, "number": 2.5, "boolean": True, "array": [], "object": {}}


def _sample(schema: dict[str, Any]) -> Any:
    """A plausible value for one parameter: its first enum value, its default, else by type."""
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("default") is not None:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):  # ["object", "string"]: take the first concrete type
        kind = next((k for k in kind if k != "null"), "string")
    return _SAMPLES.get(str(kind), "example")


def _request(description: str, arguments: dict[str, Any]) -> str:
    """A user request read off the tool's description: its first sentence plus the arguments."""
    first = description.strip().split("\n")[0].split(". ")[0].rstrip(".") or "Please do it"
    if not arguments:
        return first + "."
    listed = ", ".join(f"{name} {json.dumps(value)}" for name, value in arguments.items())
    return f"{first} ({listed})."


def worked_examples(tools: list[dict[str, Any]], count: int = 2) -> list[dict[str, str]]:
    """``count`` user/assistant pairs, each calling one of ``tools`` (OpenAI tool dicts).

    Each example fills the tool's required parameters with sample values, and
    the assistant turn is exactly one Hermes ``<tool_call>`` block, the format the
    local backend parses.
    """
    examples: list[dict[str, str]] = []
    for tool in tools[: max(count, 0)]:
        function = tool.get("function", tool)
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        parameters = function.get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = parameters.get("required", list(properties))
        arguments = {
            key: _sample(properties[key])
            for key in required
            if isinstance(properties.get(key), dict)
        }
        call = json.dumps({"name": name, "arguments": arguments})
        examples.append(
            {"role": "user", "content": _request(function.get("description") or "", arguments)}
        )
        examples.append({"role": "assistant", "content": f"<tool_call>\n{call}\n</tool_call>"})
    return examples


def echoes_tool_response(text: str) -> bool:
    """True when the model wrote a ``<tool_response>`` itself: it is imitating the
    transcript instead of answering (SmolLM2's usual reply to a tool result)."""
    return "<tool_response>" in text
