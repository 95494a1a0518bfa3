"""Tool-call formats: every strict rejection reason, and what lenient mode repairs."""

from __future__ import annotations

import pytest

from awm_core.llm.base import ChatResponse
from awm_core.models import ToolCall, ToolSpec
from awm_core.toolcalls import (
    HermesFormat,
    OpenAIToolsFormat,
    ParseFailure,
    get_format,
    repair_json,
    tool_schemas,
)

TOOLS = tool_schemas(
    [
        ToolSpec(
            name="get_note",
            input_schema={
                "type": "object",
                "properties": {"note_id": {"type": "integer"}},
                "required": ["note_id"],
                "additionalProperties": False,
            },
        ),
        ToolSpec(name="list_tools"),
    ]
)
HERMES = HermesFormat()
NATIVE = OpenAIToolsFormat()


def hermes(text: str, **kw: object) -> object:
    return HERMES.parse(ChatResponse(content=text), TOOLS, **kw)  # type: ignore[arg-type]


def native(*calls: ToolCall, reasoning: str | None = None, **kw: object) -> object:
    response = ChatResponse(tool_calls=list(calls), reasoning=reasoning)
    return NATIVE.parse(response, TOOLS, **kw)  # type: ignore[arg-type]


GOOD = '<think>need note 1</think>\n<tool_call>\n{"name": "get_note", "arguments": {"note_id": 1}}\n</tool_call>'


def test_hermes_valid_call_with_reasoning() -> None:
    result = hermes(GOOD, require_reasoning=True)
    assert result.ok
    assert result.call == ToolCall(name="get_note", arguments={"note_id": 1})
    assert result.reasoning == "need note 1"
    assert result.repairs == ()


def test_hermes_no_call_keeps_the_text_as_content() -> None:
    result = hermes("<think>done</think>The body is milk.")
    assert result.failure is ParseFailure.NO_CALL
    assert result.content == "The body is milk."


def test_hermes_malformed_json() -> None:
    result = hermes('<tool_call>{"name": "get_note", "arguments": {"note_id": 1,}}</tool_call>')
    assert result.failure is ParseFailure.MALFORMED_JSON


def test_hermes_missing_name_is_malformed() -> None:
    assert hermes('<tool_call>{"arguments": {}}</tool_call>').failure is ParseFailure.MALFORMED_JSON


def test_hermes_missing_close_tag_is_malformed_in_strict_mode() -> None:
    result = hermes('<tool_call>{"name": "get_note", "arguments": {"note_id": 1}}')
    assert result.failure is ParseFailure.MALFORMED_JSON
    assert "without" in result.detail


def test_hermes_several_calls() -> None:
    one = '<tool_call>{"name": "list_tools", "arguments": {}}</tool_call>'
    assert hermes(one + one).failure is ParseFailure.MULTIPLE_CALLS


def test_hermes_unknown_tool() -> None:
    result = hermes('<tool_call>{"name": "drop_db", "arguments": {}}</tool_call>')
    assert result.failure is ParseFailure.UNKNOWN_TOOL
    assert "drop_db" in result.detail


def test_hermes_arguments_not_matching_schema() -> None:
    result = hermes('<tool_call>{"name": "get_note", "arguments": {"note_id": "one"}}</tool_call>')
    assert result.failure is ParseFailure.INVALID_ARGUMENTS
    assert "note_id" in result.detail


def test_hermes_empty_reasoning_when_required() -> None:
    text = '<think>  </think><tool_call>{"name": "list_tools", "arguments": {}}</tool_call>'
    assert hermes(text, require_reasoning=True).failure is ParseFailure.EMPTY_REASONING
    assert hermes(text).ok  # not required: fine


def test_hermes_arguments_as_string_rejected_strict_repaired_lenient() -> None:
    text = '<tool_call>{"name": "get_note", "arguments": "{\\"note_id\\": 1}"}</tool_call>'
    assert hermes(text).failure is ParseFailure.MALFORMED_JSON
    lenient = hermes(text, lenient=True)
    assert lenient.ok and lenient.call.arguments == {"note_id": 1}
    assert "arguments_as_string" in lenient.repairs


@pytest.mark.parametrize(
    ("text", "repair"),
    [
        (
            '<tool_call>{"name": "get_note", "arguments": {"note_id": 1,},}</tool_call>',
            "trailing_comma",
        ),
        (
            "<tool_call>{'name': 'get_note', 'arguments': {'note_id': 1}}</tool_call>",
            "python_literal",
        ),
        ('<tool_call>{"name": "get_note", "arguments": {"note_id": 1}}', "missing_close_tag"),
        ('<tool_call>{"name": "get_note", "arguments": {"note_id": 1', "unclosed_brackets"),
        (
            '<tool_call>{"name": "get_note", "parameters": {"note_id": 1}}</tool_call>',
            "parameters_key",
        ),
    ],
)
def test_lenient_mode_repairs(text: str, repair: str) -> None:
    assert not hermes(text).ok
    result = hermes(text, lenient=True)
    assert result.ok, result.detail
    assert result.call.arguments == {"note_id": 1}
    assert repair in result.repairs


def test_lenient_mode_still_rejects_nonsense() -> None:
    assert hermes("<tool_call>get note one please</tool_call>", lenient=True).failure is (
        ParseFailure.MALFORMED_JSON
    )


def test_native_valid_call() -> None:
    result = native(ToolCall(id="c", name="get_note", arguments={"note_id": 2}), reasoning="r")
    assert result.ok and result.call.id == "c" and result.reasoning == "r"


def test_native_no_call() -> None:
    assert native().failure is ParseFailure.NO_CALL


def test_native_several_calls() -> None:
    call = ToolCall(name="list_tools")
    assert native(call, call).failure is ParseFailure.MULTIPLE_CALLS


def test_native_unknown_tool_and_bad_arguments() -> None:
    assert native(ToolCall(name="nope")).failure is ParseFailure.UNKNOWN_TOOL
    bad = ToolCall(name="get_note", arguments={"note_id": 1, "extra": True})
    assert native(bad).failure is ParseFailure.INVALID_ARGUMENTS


def test_native_undecodable_arguments_are_malformed_then_repaired() -> None:
    raw = ToolCall(name="get_note", arguments={"_raw": "{'note_id': 3,}"})
    assert native(raw).failure is ParseFailure.MALFORMED_JSON
    repaired = native(raw, lenient=True)
    assert repaired.ok and repaired.call.arguments == {"note_id": 3}


def test_native_empty_reasoning() -> None:
    result = native(ToolCall(name="list_tools"), require_reasoning=True)
    assert result.failure is ParseFailure.EMPTY_REASONING


def test_without_tool_map_names_are_not_checked() -> None:
    result = HERMES.parse(
        ChatResponse(content='<tool_call>{"name": "x", "arguments": {}}</tool_call>')
    )
    assert result.ok


def test_hermes_prompt_lists_every_tool_and_the_convention() -> None:
    specs = [ToolSpec(name="alpha", description="A."), ToolSpec(name="beta")]
    prompt = HERMES.system_prompt("Base.", specs)
    assert prompt.startswith("Base.")
    assert '"name": "alpha"' in prompt and '"name": "beta"' in prompt
    assert "<tools>" in prompt and "<tool_call>" in prompt
    assert HERMES.request_tools(specs) is None
    assert NATIVE.system_prompt("Base.", specs) == "Base."
    assert NATIVE.request_tools(specs)[0]["function"]["name"] == "alpha"


@pytest.mark.parametrize("fmt", ["hermes", "openai"])
def test_rendered_calls_parse_back(fmt: str) -> None:
    form = get_format(fmt)
    call = ToolCall(id="c1", name="get_note", arguments={"note_id": 4})
    parsed = form.parse(
        form.assistant_response(call, reasoning="why"), TOOLS, require_reasoning=True
    )
    assert parsed.ok
    assert (parsed.call.name, parsed.call.arguments) == ("get_note", {"note_id": 4})


def test_repair_json_order_and_failure() -> None:
    assert repair_json('{"a": 1}') == ({"a": 1}, [])
    assert repair_json('```json\n{"a": [1, 2,]}\n```') == (
        {"a": [1, 2]},
        ["code_fence", "trailing_comma"],
    )
    with pytest.raises(ValueError):
        repair_json("not json at all")


def test_unknown_format_name() -> None:
    with pytest.raises(KeyError, match="hermes"):
        get_format("xml")
