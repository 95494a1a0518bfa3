"""Worked tool-call examples and the answer step of the local backend (no model needed).

The backend's generation is replaced at ``_complete``, the one place that runs the
model, so these tests see exactly the chats the model would see.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from awm_core.llm.local_backend import LocalBackend
from awm_core.llm.tool_shots import ANSWER_INSTRUCTION, worked_examples
from awm_core.models import Message, TokenUsage, ToolCall

FACTORIAL = {
    "type": "function",
    "function": {
        "name": "math_factorial",
        "description": "Calculate the factorial of a number. Works for n up to 170.",
        "parameters": {
            "type": "object",
            "properties": {
                "number": {"type": "integer"},
                "mode": {"type": "string", "enum": ["exact", "float"]},
                "note": {"type": "string"},
            },
            "required": ["number", "mode"],
        },
    },
}
NO_ARGS = {"type": "function", "function": {"name": "get_time", "description": "Now."}}


def test_an_example_calls_the_offered_tool_with_its_required_arguments() -> None:
    user, assistant = worked_examples([FACTORIAL], 2)
    assert user == {
        "role": "user",
        "content": 'Calculate the factorial of a number (number 3, mode "exact").',
    }
    body = assistant["content"]
    assert body.startswith("<tool_call>\n") and body.endswith("\n</tool_call>")
    call = json.loads(body.removeprefix("<tool_call>").removesuffix("</tool_call>"))
    assert call == {"name": "math_factorial", "arguments": {"number": 3, "mode": "exact"}}


def test_examples_follow_the_tools_in_order_up_to_the_count() -> None:
    examples = worked_examples([NO_ARGS, FACTORIAL, NO_ARGS], 2)
    assert [m["role"] for m in examples] == ["user", "assistant"] * 2
    assert '"get_time"' in examples[1]["content"] and '"math_factorial"' in examples[3]["content"]
    assert worked_examples([FACTORIAL], 0) == []
    assert worked_examples([{"function": {"description": "no name"}}], 2) == []


class _Recorder(LocalBackend):
    """A LocalBackend whose model is a list of canned replies; it records every chat."""

    def __init__(self, replies: list[str], **options: Any) -> None:
        super().__init__("smollm2", **options)
        self.replies = replies
        self.chats: list[list[dict[str, str]]] = []

    def load(self) -> float:
        return 0.0

    def _complete(self, chat: list[dict[str, str]], decoding: Any) -> tuple[str, TokenUsage]:
        self.chats.append(chat)
        return self.replies.pop(0), TokenUsage(prompt_tokens=10, completion_tokens=2)


QUESTION = [Message(role="user", content="What is 5 factorial?")]


async def test_the_bundled_model_sees_two_examples_after_the_system_prompt() -> None:
    backend = _Recorder(
        ['<tool_call>\n{"name": "math_factorial", "arguments": {"number": 5}}\n</tool_call>']
    )
    response = await backend.chat(QUESTION, tools=[FACTORIAL, NO_ARGS])
    (chat,) = backend.chats
    assert chat[0]["role"] == "system" and "<tools>" in chat[0]["content"]
    assert chat[1:5] == worked_examples([FACTORIAL, NO_ARGS], 2)
    assert chat[5:] == [{"role": "user", "content": "What is 5 factorial?"}]
    # the examples are prompt only: the answer is the model's call, nothing else
    assert [c.name for c in response.tool_calls] == ["math_factorial"]


async def test_no_examples_without_tools_or_when_turned_off() -> None:
    plain = _Recorder(["Paris."])
    await plain.chat(QUESTION)
    assert plain.chats[0] == [{"role": "user", "content": "What is 5 factorial?"}]
    off = _Recorder(["120"], tool_shots=0)
    await off.chat(QUESTION, tools=[FACTORIAL])
    assert [m["role"] for m in off.chats[0]] == ["system", "user"]
    assert LocalBackend("/some/model/folder").tool_shots == 0  # a trained model keeps its format


def _after_a_tool_result() -> list[Message]:
    call = ToolCall(id="c1", name="math_factorial", arguments={"number": 5})
    return [
        *QUESTION,
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", content="120", name="math_factorial", tool_call_id="c1"),
    ]


async def test_an_echoed_tool_response_is_replaced_by_a_plain_answer() -> None:
    backend = _Recorder(["<tool_response>\n120\n</tool_response>", "5! is 120."])
    response = await backend.chat(_after_a_tool_result(), tools=[FACTORIAL])
    assert response.content == "5! is 120." and not response.tool_calls
    assert backend.answer_steps == 1
    answer_chat = backend.chats[1]
    assert answer_chat[-1] == {"role": "user", "content": ANSWER_INSTRUCTION}
    assert "<tools>" not in json.dumps(answer_chat)  # asked without tools
    assert response.usage.prompt_tokens == 20 and response.usage.completion_tokens == 4


@pytest.mark.parametrize(
    "reply", ["It is 120.", '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>']
)
async def test_an_answer_or_a_call_after_a_tool_result_is_kept(reply: str) -> None:
    backend = _Recorder([reply])
    await backend.chat(_after_a_tool_result(), tools=[FACTORIAL, NO_ARGS])
    assert backend.answer_steps == 0 and len(backend.chats) == 1


def test_a_hermes_prompt_gives_its_tools_back() -> None:
    from awm_core.episode import META_TOOLS
    from awm_core.toolcalls import HermesFormat

    fmt = HermesFormat()
    prompt = fmt.system_prompt("Be brief.", META_TOOLS)
    assert [t["function"]["name"] for t in fmt.prompt_tools(prompt)] == ["list_tools", "call_tool"]
    assert fmt.prompt_tools("Be brief.") == []


def _meta_tools() -> list[dict[str, Any]]:
    from awm_core.episode import META_TOOLS
    from awm_core.toolcalls import openai_tool

    return [openai_tool(t) for t in META_TOOLS]


def test_meta_tools_get_a_list_tools_example_then_call_tool_examples_of_the_env() -> None:
    (user, first) = worked_examples(_meta_tools(), 2, QUESTION)
    assert json.loads(first["content"].split("\n")[1]) == {"name": "list_tools", "arguments": {}}
    listed = [
        {"name": "get_time", "description": "Now.", "input_schema": {"type": "object"}},
        {"name": "math_factorial", **{"input_schema": FACTORIAL["function"]["parameters"]}},
    ]
    history = [
        *QUESTION,
        Message(role="assistant", content='<tool_call>\n{"name": "list_tools"}\n</tool_call>'),
        Message(role="user", content=f"<tool_response>\n{json.dumps(listed)}\n</tool_response>"),
    ]
    examples = worked_examples(_meta_tools(), 2, history)
    calls = [json.loads(m["content"].split("\n")[1]) for m in examples[1::2]]
    assert calls == [
        {"name": "call_tool", "arguments": {"tool_name": "get_time", "arguments": {}}},
        {
            "name": "call_tool",
            "arguments": {
                "tool_name": "math_factorial",
                "arguments": {"number": 3, "mode": "exact"},
            },
        },
    ]


async def test_a_hermes_episode_prompt_gets_examples_and_the_answer_step() -> None:
    """The episode's default format puts the tools in the system prompt, not the request."""
    from awm_core.episode import META_TOOLS
    from awm_core.toolcalls import HermesFormat

    system = Message(role="system", content=HermesFormat().system_prompt("Act.", META_TOOLS))
    backend = _Recorder(['<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'])
    await backend.chat([system, *QUESTION])
    assert '"list_tools"' in backend.chats[0][2]["content"]  # the example's call
    echo = _Recorder(["<tool_response>\n[]\n</tool_response>", "Done."])
    result = Message(role="user", content="<tool_response>\n120\n</tool_response>")
    response = await echo.chat([system, *QUESTION, result])
    assert response.content == "Done." and echo.answer_steps == 1
