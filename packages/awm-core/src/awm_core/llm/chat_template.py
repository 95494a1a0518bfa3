"""Messages to a chat template's input and generated text back to a response.

The local backend (inference) and awm-train's token policy (RL rollouts) both
render through these two functions, so a model is trained on exactly the
prompts it sees at inference.
"""

from __future__ import annotations

from typing import Any

from awm_core.llm.base import ChatResponse
from awm_core.llm.wire import split_reasoning
from awm_core.models import Message, ToolSpec
from awm_core.toolcalls import HermesFormat

__all__ = ["response_from_text", "template_messages"]


def template_messages(
    messages: list[Message], tools: list[dict[str, Any]] | None
) -> list[dict[str, str]]:
    """Messages as ``{role, content}`` dicts for a plain ChatML template (Hermes tool calls).

    Native tool calls in the history are written back as ``<tool_call>`` text
    and tool results as ``<tool_response>`` user turns, because a template
    without tool support would otherwise drop them.
    """
    fmt = HermesFormat()
    out: list[dict[str, str]] = []
    for m in messages:
        content = m.content
        if m.role == "assistant" and m.tool_calls:
            content = "\n".join([content, *(fmt.render_call(c) for c in m.tool_calls)]).strip()
        role = m.role
        if role == "tool":
            role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        out.append({"role": role, "content": content})
    if tools:
        specs = [
            ToolSpec(
                name=t["function"]["name"],
                description=t["function"].get("description", ""),
                input_schema=t["function"].get("parameters") or {"type": "object"},
            )
            for t in tools
        ]
        if out and out[0]["role"] == "system":
            out[0]["content"] = fmt.system_prompt(out[0]["content"], specs)
        else:
            out.insert(0, {"role": "system", "content": fmt.system_prompt("", specs).lstrip()})
    return out


def response_from_text(text: str, tools: list[dict[str, Any]] | None) -> ChatResponse:
    """Separate ``<think>``; with ``tools`` given, turn one ``<tool_call>`` into a native call."""
    reasoning, content = split_reasoning(text)
    if tools:
        parsed = HermesFormat().parse(ChatResponse(content=content))
        if parsed.call is not None:
            return ChatResponse(
                content=parsed.content,
                reasoning=reasoning,
                tool_calls=[parsed.call],
                finish_reason="tool_calls",
            )
    return ChatResponse(content=content, reasoning=reasoning, finish_reason="stop")
