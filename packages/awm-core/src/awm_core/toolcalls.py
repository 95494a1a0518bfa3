"""Tool-call formats: how tools are shown to a model and how its calls are read back.

Two formats:

``hermes``
    Qwen3 / Hermes text: tools are listed in the system prompt inside
    ``<tools></tools>``; the model thinks in ``<think>...</think>`` and calls with
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. Works with any
    chat model, including ones served without a tool parser.
``openai``
    Native ``tools`` / ``tool_calls`` of the chat-completions API.

The strict parser never guesses: it returns a :class:`ParseFailure` saying
exactly what was wrong, which the episode loop turns into an early termination
(and a -1 reward in training). ``lenient=True`` repairs common slips (trailing
commas, single quotes, a missing closing tag, arguments sent as a JSON string,
a tool called directly instead of through ``call_tool``) for evaluation, where
one wants to measure task skill rather than formatting.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from awm_core.argcheck import check_arguments
from awm_core.llm.base import ChatResponse
from awm_core.llm.extract import unfence
from awm_core.llm.wire import split_reasoning
from awm_core.models import Message, ToolCall, ToolSpec


class ParseFailure(StrEnum):
    """Why a model turn was not one valid tool call."""

    NO_CALL = "no_call"  # no tool call at all (in an episode: the final answer)
    MALFORMED_JSON = "malformed_json"  # the call is not a JSON object with name and arguments
    MULTIPLE_CALLS = "multiple_calls"  # more than one call in one turn
    UNKNOWN_TOOL = "unknown_tool"  # a name the model was not offered
    INVALID_ARGUMENTS = "invalid_arguments"  # arguments do not match the tool's input schema
    EMPTY_REASONING = "empty_reasoning"  # thinking was required and is missing or blank


@dataclass(frozen=True)
class ParseResult:
    """One parsed assistant turn.

    ``call`` is set when the turn holds exactly one call; ``failure`` says why
    not otherwise (``NO_CALL`` included, so callers decide what no call means).
    ``repairs`` lists what lenient mode fixed; it is empty in strict mode.
    """

    reasoning: str | None
    content: str
    call: ToolCall | None = None
    failure: ParseFailure | None = None
    detail: str = ""
    repairs: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the turn is exactly one valid call."""
        return self.failure is None and self.call is not None


def tool_schemas(tools: Sequence[ToolSpec]) -> dict[str, dict[str, Any]]:
    """``{name: input_schema}``, the shape the validators take."""
    return {t.name: t.input_schema for t in tools}


def validate_call(
    call: ToolCall, tools: Mapping[str, Mapping[str, Any]]
) -> tuple[ParseFailure, str] | None:
    """Check a call's name and arguments against ``{name: input_schema}``."""
    if call.name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        return ParseFailure.UNKNOWN_TOOL, f"{call.name!r} is not an offered tool (offered: {known})"
    problem = check_arguments(call.name, tools[call.name], call.arguments)
    if problem is not None:
        return ParseFailure.INVALID_ARGUMENTS, problem
    return None


# --------------------------------------------------------------------------- lenient JSON


# Only lenient mode reads through a code fence (the shared awm_core.llm.extract.unfence) and
# repairs; strict mode decodes exactly what the model wrote, so that a format reward sees
# the precise ParseFailure of a fenced or slightly broken call.
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _close_brackets(text: str) -> str:
    """Append the closing brackets a truncated JSON text is missing (ignores string contents)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    return text + ('"' if in_string else "") + "".join(reversed(stack))


def repair_json(text: str) -> tuple[Any, list[str]]:
    """Decode almost-JSON; returns ``(value, repairs)`` or raises ``ValueError``.

    Tries, in order: as is; without a code fence; without trailing commas; with
    missing closing brackets added; as a Python literal (single quotes,
    True/False/None).
    """
    repairs: list[str] = []
    candidate, fenced = unfence(text)
    if fenced:
        repairs.append("code_fence")
    steps: list[tuple[str, Any]] = [
        ("", lambda s: s),
        ("trailing_comma", lambda s: _TRAILING_COMMA.sub(r"\1", s)),
        ("unclosed_brackets", lambda s: _close_brackets(_TRAILING_COMMA.sub(r"\1", s))),
    ]
    for name, fix in steps:
        try:
            value = json.loads(fix(candidate))
        except json.JSONDecodeError:
            continue
        return value, repairs + ([name] if name else [])
    pythonish = re.sub(r"\btrue\b", "True", candidate)
    pythonish = re.sub(r"\bfalse\b", "False", pythonish)
    pythonish = re.sub(r"\bnull\b", "None", pythonish)
    try:
        value = ast.literal_eval(_TRAILING_COMMA.sub(r"\1", pythonish))
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not JSON even after repairs: {exc}") from exc
    return value, [*repairs, "python_literal"]


# --------------------------------------------------------------------------- formats


def _call_from_object(
    obj: Any, *, lenient: bool, repairs: list[str]
) -> tuple[ToolCall | None, str]:
    """Turn a decoded ``{"name", "arguments"}`` object into a ToolCall, or say why not."""
    if not isinstance(obj, dict):
        return None, f"a tool call must be a JSON object, got {type(obj).__name__}"
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None, 'a tool call needs a "name" string'
    args = obj.get("arguments", None)
    if args is None and lenient and "parameters" in obj:
        args = obj["parameters"]
        repairs.append("parameters_key")
    if args is None:
        args = {}
    if isinstance(args, str):
        if not lenient:
            return None, f'"arguments" of {name!r} must be a JSON object, not a string'
        try:
            args, more = repair_json(args) if args.strip() else ({}, [])
        except ValueError as exc:
            return None, f'"arguments" of {name!r} is a string that is not JSON: {exc}'
        repairs.extend(["arguments_as_string", *more])
    if not isinstance(args, dict):
        return None, f'"arguments" of {name!r} must be a JSON object'
    return ToolCall(name=name, arguments=args), ""


@dataclass(frozen=True)
class HermesFormat:
    """Qwen3 / Hermes ``<tool_call>`` text (see the module docstring).

    ``tool_result_role`` is the role tool results are sent under: ``tool`` for
    servers whose chat template wraps them (Qwen3, vLLM), ``user`` for plain
    ChatML models that do not know a tool role.
    """

    name: Literal["hermes"] = "hermes"
    tool_result_role: Literal["tool", "user"] = "tool"
    open_tag: str = "<tool_call>"
    close_tag: str = "</tool_call>"

    def system_prompt(self, base: str, tools: Sequence[ToolSpec]) -> str:
        """``base`` followed by the tool definitions and the calling convention."""
        lines = [json.dumps(openai_tool(t), ensure_ascii=False) for t in tools]
        return (
            f"{base.rstrip()}\n\n"
            "# Tools\n\n"
            "You can call the functions whose JSON signatures are listed between "
            "<tools> and </tools>:\n"
            "<tools>\n" + "\n".join(lines) + "\n</tools>\n\n"
            "To call a function, reply with one JSON object holding its name and "
            "arguments between tool-call tags, and nothing after it:\n"
            f'{self.open_tag}\n{{"name": "FUNCTION_NAME", "arguments": {{"ARG": "VALUE"}}}}\n'
            f"{self.close_tag}\n"
            "Make at most one call per reply. When you need no more calls, reply "
            "with your final answer as plain text."
        )

    def request_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]] | None:
        """Hermes puts the tools in the prompt, so the request carries none."""
        return None

    def prompt_tools(self, system: str) -> list[dict[str, Any]]:
        """The OpenAI tool dicts a :meth:`system_prompt` lists (none if it lists none).

        A backend that is handed a Hermes prompt (no ``tools`` in the request) reads
        the offered tools back from it, e.g. to build worked examples.
        """
        start, end = system.find("<tools>\n"), system.find("\n</tools>")
        if start < 0 or end < start:
            return []
        tools = []
        for line in system[start + len("<tools>\n") : end].splitlines():
            try:
                tool = json.loads(line)
            except ValueError:
                continue
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
                tools.append(tool)
        return tools

    def parse(
        self,
        response: ChatResponse,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        require_reasoning: bool = False,
        lenient: bool = False,
    ) -> ParseResult:
        """Read one turn; ``tools`` (``{name: schema}``) enables name and schema checks."""
        think, text = split_reasoning(response.content)
        reasoning = _join(response.reasoning, think)
        repairs: list[str] = []
        blocks, rest, unclosed = self._blocks(text)
        if unclosed is not None:
            if not lenient:
                return ParseResult(
                    reasoning,
                    rest,
                    failure=ParseFailure.MALFORMED_JSON,
                    detail=f"{self.open_tag} without {self.close_tag}",
                )
            blocks.append(unclosed)
            repairs.append("missing_close_tag")
        raw_calls: list[ToolCall] = []
        if not blocks and response.tool_calls:
            # A server with its own tool parser already extracted the call.
            raw_calls = list(response.tool_calls)
        return _finish(
            reasoning,
            rest.strip(),
            blocks,
            raw_calls,
            tools,
            require_reasoning=require_reasoning,
            lenient=lenient,
            repairs=repairs,
        )

    def _blocks(self, text: str) -> tuple[list[str], str, str | None]:
        """Split out tool-call bodies: ``(bodies, text outside them, unclosed body or None)``."""
        bodies: list[str] = []
        outside: list[str] = []
        pos = 0
        while True:
            start = text.find(self.open_tag, pos)
            if start < 0:
                outside.append(text[pos:])
                return bodies, "".join(outside), None
            outside.append(text[pos:start])
            end = text.find(self.close_tag, start)
            if end < 0:
                return bodies, "".join(outside), text[start + len(self.open_tag) :]
            bodies.append(text[start + len(self.open_tag) : end])
            pos = end + len(self.close_tag)

    def render_call(self, call: ToolCall) -> str:
        """A call as the model should have written it (for replayed or reference turns)."""
        body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        return f"{self.open_tag}\n{body}\n{self.close_tag}"

    def assistant_response(
        self, call: ToolCall | None, *, reasoning: str | None = None, content: str = ""
    ) -> ChatResponse:
        """A model answer in this format (what a scripted or reference policy returns)."""
        text = content if call is None else _join_text(content, self.render_call(call))
        if reasoning is not None:
            text = f"<think>\n{reasoning}\n</think>\n\n{text}"
        return ChatResponse(content=text, finish_reason="stop")

    def assistant_message(self, response: ChatResponse, parsed: ParseResult) -> Message:
        """The history entry for a turn: the call kept as text, the thinking kept apart."""
        _, text = split_reasoning(response.content)
        if parsed.call is not None and parsed.repairs:
            text = _join_text(parsed.content, self.render_call(parsed.call))
        return Message(role="assistant", content=text.strip(), reasoning=parsed.reasoning)

    def tool_message(self, call: ToolCall, text: str) -> Message:
        """The history entry for a tool's result."""
        if self.tool_result_role == "user":
            return Message(role="user", content=f"<tool_response>\n{text}\n</tool_response>")
        return Message(role="tool", content=text, name=call.name, tool_call_id=call.id)


@dataclass(frozen=True)
class OpenAIToolsFormat:
    """Native chat-completions ``tools`` and ``tool_calls``."""

    name: Literal["openai"] = "openai"

    def system_prompt(self, base: str, tools: Sequence[ToolSpec]) -> str:
        """The tools travel in the request, so the prompt is ``base`` unchanged."""
        return base

    def request_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]] | None:
        """The ``tools`` request parameter."""
        return [openai_tool(t) for t in tools]

    def parse(
        self,
        response: ChatResponse,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        require_reasoning: bool = False,
        lenient: bool = False,
    ) -> ParseResult:
        """Read one turn from ``response.tool_calls``."""
        think, text = split_reasoning(response.content)
        reasoning = _join(response.reasoning, think)
        return _finish(
            reasoning,
            text.strip(),
            [],
            list(response.tool_calls),
            tools,
            require_reasoning=require_reasoning,
            lenient=lenient,
            repairs=[],
        )

    def assistant_response(
        self, call: ToolCall | None, *, reasoning: str | None = None, content: str = ""
    ) -> ChatResponse:
        """A model answer in this format (what a scripted or reference policy returns)."""
        return ChatResponse(
            content=content,
            reasoning=reasoning,
            tool_calls=[call] if call is not None else [],
            finish_reason="tool_calls" if call is not None else "stop",
        )

    def assistant_message(self, response: ChatResponse, parsed: ParseResult) -> Message:
        """The history entry for a turn, with the call as a native ``tool_calls`` entry."""
        calls = [parsed.call] if parsed.call is not None else list(response.tool_calls)
        return Message(
            role="assistant", content=parsed.content, reasoning=parsed.reasoning, tool_calls=calls
        )

    def tool_message(self, call: ToolCall, text: str) -> Message:
        """The history entry for a tool's result, answering the call's id."""
        return Message(role="tool", content=text, name=call.name, tool_call_id=call.id)


ToolCallFormat = HermesFormat | OpenAIToolsFormat

FORMATS: dict[str, ToolCallFormat] = {"hermes": HermesFormat(), "openai": OpenAIToolsFormat()}


def get_format(fmt: str | ToolCallFormat) -> ToolCallFormat:
    """A format by name (``hermes``, ``openai``) or the object itself."""
    if not isinstance(fmt, str):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        from awm_core.errors import UnknownNameError

        raise UnknownNameError("tool-call format", fmt, list(FORMATS)) from None


def openai_tool(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an OpenAI ``{"type": "function", "function": {...}}`` definition."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


# --------------------------------------------------------------------------- shared checks


def _join(*parts: str | None) -> str | None:
    present = [p for p in parts if p is not None]
    if not present:
        return None
    return "\n".join(p for p in present if p.strip())


def _join_text(*parts: str) -> str:
    return "\n".join(p for p in parts if p.strip())


@dataclass
class _Calls:
    calls: list[ToolCall] = field(default_factory=list)
    error: str = ""


def _decode_blocks(blocks: list[str], *, lenient: bool, repairs: list[str]) -> _Calls:
    out = _Calls()
    for body in blocks:
        try:
            obj: Any = json.loads(body)
        except json.JSONDecodeError as exc:
            if not lenient:
                out.error = f"tool call is not valid JSON ({exc.msg} at char {exc.pos})"
                return out
            try:
                obj, more = repair_json(body)
            except ValueError as rexc:
                out.error = f"tool call is not valid JSON: {rexc}"
                return out
            repairs.extend(more)
        call, why = _call_from_object(obj, lenient=lenient, repairs=repairs)
        if call is None:
            out.error = why
            return out
        out.calls.append(call)
    return out


def _finish(
    reasoning: str | None,
    content: str,
    blocks: list[str],
    native: list[ToolCall],
    tools: Mapping[str, Mapping[str, Any]] | None,
    *,
    require_reasoning: bool,
    lenient: bool,
    repairs: list[str],
) -> ParseResult:
    """The checks both formats share, in a fixed order so the reported reason is stable."""

    def fail(reason: ParseFailure, detail: str, call: ToolCall | None = None) -> ParseResult:
        return ParseResult(reasoning, content, call, reason, detail, tuple(repairs))

    if require_reasoning and not (reasoning or "").strip():
        return fail(ParseFailure.EMPTY_REASONING, "the turn has no <think> reasoning")
    count = len(blocks) + len(native)
    if count == 0:
        return fail(ParseFailure.NO_CALL, "the turn makes no tool call")
    if count > 1:
        return fail(ParseFailure.MULTIPLE_CALLS, f"the turn makes {count} tool calls; make one")
    if blocks:
        decoded = _decode_blocks(blocks, lenient=lenient, repairs=repairs)
        if decoded.error:
            return fail(ParseFailure.MALFORMED_JSON, decoded.error)
        call = decoded.calls[0]
    else:
        call = native[0]
        if "_raw" in call.arguments and len(call.arguments) == 1:
            raw = call.arguments["_raw"]
            if not lenient or not isinstance(raw, str):
                return fail(
                    ParseFailure.MALFORMED_JSON, f"arguments are not a JSON object: {raw!r}"
                )
            try:
                args, more = repair_json(raw)
            except ValueError as exc:
                return fail(ParseFailure.MALFORMED_JSON, f"arguments are not JSON: {exc}")
            if not isinstance(args, dict):
                return fail(ParseFailure.MALFORMED_JSON, "arguments must be a JSON object")
            repairs.extend(more)
            call = call.model_copy(update={"arguments": args})
    if tools is not None:
        problem = validate_call(call, tools)
        if problem is not None:
            return fail(problem[0], problem[1], call)
    return ParseResult(reasoning, content, call, None, "", tuple(repairs))
