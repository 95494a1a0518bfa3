"""Worked tool-call examples for small local models, built from the tools on offer.

SmolLM2-135M was never trained to call tools: asked zero-shot it answers in
prose (0 of 10 BFCL ``simple`` cases produced a ``<tool_call>``, in either the
Hermes format or the list format of SmolLM2's larger siblings). Two worked
examples fix the format, and examples made from the request's *own* tools work
far better than fixed ones, because a small model copies the names it has just
seen: measured on the first 10 BFCL ``simple`` cases, fixed weather/currency
examples gave 8 well-formed calls but 1 right tool name; examples built here
gave 7 well-formed calls and 4 right names.

In an awm episode the offered tools are the two meta-tools. Before the
environment's tools are known, the example is a ``list_tools`` call; once a
``list_tools`` result is in the conversation, the examples are ``call_tool``
calls of the environment's own first tools.

The examples are prepended to the prompt at inference only. They are never part
of the messages a backend returns, so trajectories and training data do not
contain them.
"""

from __future__ import annotations

import json
from typing import Any

from awm_core.models import Message

__all__ = [
    "ANSWER_INSTRUCTION",
    "echoes_tool_response",
    "environment_tools",
    "is_tool_result",
    "worked_examples",
]

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


def is_tool_result(message: Message) -> bool:
    """A tool's result, sent natively (role ``tool``) or as a ``<tool_response>`` user turn."""
    if message.role == "tool":
        return True
    return message.role == "user" and message.content.lstrip().startswith("<tool_response>")


def _result_text(message: Message) -> str:
    text = message.content.strip()
    if message.role == "user":
        text = text.removeprefix("<tool_response>").removesuffix("</tool_response>").strip()
    return text


def environment_tools(messages: list[Message]) -> list[dict[str, Any]]:
    """The environment's tools from the latest ``list_tools`` result in ``messages``, as
    OpenAI tool dicts (none before ``list_tools`` has answered)."""
    for message in reversed(messages):
        if not is_tool_result(message):
            continue
        try:
            listed = json.loads(_result_text(message))
        except ValueError:
            continue
        if (
            isinstance(listed, list)
            and listed
            and all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in listed)
        ):
            return [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description") or "",
                        "parameters": t.get("input_schema") or {"type": "object"},
                    },
                }
                for t in listed
            ]
    return []


def _example(function: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The user request and sample arguments for one tool."""
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    required = parameters.get("required", list(properties))
    arguments = {
        key: _sample(properties[key]) for key in required if isinstance(properties.get(key), dict)
    }
    return _request(function.get("description") or "", arguments), arguments


def _pair(request: str, name: str, arguments: dict[str, Any]) -> list[dict[str, str]]:
    call = json.dumps({"name": name, "arguments": arguments})
    return [
        {"role": "user", "content": request},
        {"role": "assistant", "content": f"<tool_call>\n{call}\n</tool_call>"},
    ]


def worked_examples(
    tools: list[dict[str, Any]], count: int = 2, messages: list[Message] | None = None
) -> list[dict[str, str]]:
    """Up to ``count`` user/assistant pairs, each calling one of ``tools`` (OpenAI tool dicts).

    Each example fills the tool's required parameters with sample values, and
    the assistant turn is exactly one Hermes ``<tool_call>`` block, the format the
    local backend parses. When ``tools`` are awm's meta-tools, ``messages`` (the
    conversation so far) decide between a ``list_tools`` example and ``call_tool``
    examples of the environment's tools.
    """
    from awm_core.episode import CALL_TOOL, LIST_TOOLS  # episode imports this package

    names = [t.get("function", t).get("name") for t in tools]
    if CALL_TOOL in names and LIST_TOOLS in names:
        inner = environment_tools(messages or [])
        if not inner:
            request = "Which tools does this application have?"
            return _pair(request, LIST_TOOLS, {}) if count > 0 else []
        examples: list[dict[str, str]] = []
        for tool in inner[: max(count, 0)]:
            made = _example(tool["function"])
            if made:
                request, arguments = made
                inner_call = {"tool_name": tool["function"]["name"], "arguments": arguments}
                examples += _pair(request, CALL_TOOL, inner_call)
        return examples
    examples = []
    for tool in tools[: max(count, 0)]:
        made = _example(tool.get("function", tool))
        if made:
            examples += _pair(made[0], tool.get("function", tool)["name"], made[1])
    return examples


def echoes_tool_response(text: str) -> bool:
    """True when the model wrote a ``<tool_response>`` itself: it is imitating the
    transcript instead of answering (SmolLM2's usual reply to a tool result)."""
    return "<tool_response>" in text
