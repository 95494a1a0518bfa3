"""The episode loop: reference replay, every early-termination rule, history, serialisation."""

from __future__ import annotations

import json

import pytest

from awm_core.episode import (
    EpisodeSettings,
    Policy,
    ReferencePolicy,
    StepChecks,
    Violation,
    run_episode,
)
from awm_core.fake_env import FakeNotesEnv
from awm_core.llm.base import ChatResponse
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Complexity, Task, Termination, TokenUsage, ToolCall, Trajectory

TASK = Task(id="t", instruction="What is on my Groceries note?", complexity=Complexity.EASY)


def call(name: str, arguments: dict | None = None, think: str | None = "ok") -> str:
    body = json.dumps({"name": name, "arguments": arguments or {}})
    prefix = f"<think>{think}</think>\n" if think is not None else ""
    return f"{prefix}<tool_call>\n{body}\n</tool_call>"


def tool(name: str, args: dict | None = None, think: str | None = "ok") -> str:
    return call("call_tool", {"tool_name": name, "arguments": args or {}}, think)


LIST = call("list_tools")
GET1 = tool("get_note", {"note_id": 1})


async def run(replies: list, **kw: object) -> tuple[Trajectory, ScriptedBackend, FakeNotesEnv]:
    backend = ScriptedBackend(replies)
    env = kw.pop("env", None) or FakeNotesEnv()
    settings = EpisodeSettings(**kw)  # type: ignore[arg-type]
    traj = await run_episode(Policy(backend), env, TASK, settings=settings)  # type: ignore[arg-type]
    return traj, backend, env


@pytest.mark.parametrize("fmt", ["hermes", "openai"])
async def test_reference_policy_solves_every_fake_task(fmt: str) -> None:
    for task in FakeNotesEnv.tasks():
        env = FakeNotesEnv()
        settings = EpisodeSettings(fmt=fmt, checks=StepChecks.paper())
        traj = await run_episode(ReferencePolicy(task), env, task, settings=settings)
        assert traj.termination is Termination.FINAL_ANSWER, traj.termination_reason
        assert traj.final_answer == task.reference_answer
        assert [c[0] for c in env.calls] == [s.tool for s in task.reference_solution or []]
        assert traj.steps[0].tool_call.name == "list_tools"


async def test_reference_replay_changes_the_environment() -> None:
    task = next(t for t in FakeNotesEnv.tasks() if t.id == "create_todo")
    env = FakeNotesEnv()
    await run_episode(ReferencePolicy(task), env, task)
    assert env.state["notes"][4]["title"] == "Todo"


async def test_a_good_episode_records_messages_steps_and_usage() -> None:
    traj, _, _ = await run([LIST, GET1, "<think>got it</think>milk, eggs, bread"])
    assert traj.termination is Termination.FINAL_ANSWER
    assert traj.final_answer == "milk, eggs, bread"
    assert [m.role for m in traj.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert traj.steps[1].result.content["body"] == "milk, eggs, bread"
    assert traj.steps[1].result.latency_s > 0
    assert traj.steps[2].assistant.reasoning == "got it"
    assert traj.usage == sum((s.usage for s in traj.steps), TokenUsage())
    assert traj.usage.completion_tokens > 0
    assert "list_tools" in traj.messages[0].content  # the meta-tools are in the prompt


async def test_trajectory_round_trips_through_json() -> None:
    traj, _, _ = await run([LIST, GET1, "done"])
    again = Trajectory.model_validate_json(traj.model_dump_json())
    assert again == traj


async def test_call_tool_arguments_may_be_a_json_string() -> None:
    as_string = call("call_tool", {"tool_name": "get_note", "arguments": '{"note_id": 1}'})
    traj, _, env = await run([LIST, as_string, "done"])
    assert traj.termination is Termination.FINAL_ANSWER
    assert env.calls == [("get_note", {"note_id": 1})]


# ------------------------------------------------------------------ early termination


async def assert_violation(replies: list, kind: Violation, step: int, **kw: object) -> Trajectory:
    traj, _, _ = await run(replies, **kw)
    assert traj.termination is Termination.FORMAT_ERROR
    assert traj.steps[-1].violation == kind.value
    assert traj.steps[-1].index == step
    assert traj.termination_reason.startswith(f"step {step}: {kind.value}")
    return traj


async def test_call_tool_before_list_tools() -> None:
    traj = await assert_violation([GET1], Violation.LIST_TOOLS_NOT_FIRST, 0)
    assert traj.steps[0].result is None  # the tool never ran


async def test_list_tools_twice() -> None:
    await assert_violation([LIST, GET1, LIST], Violation.LIST_TOOLS_REPEATED, 2)


async def test_unknown_meta_tool() -> None:
    await assert_violation([LIST, call("get_note", {"note_id": 1})], Violation.UNKNOWN_TOOL, 1)


async def test_unknown_environment_tool() -> None:
    traj = await assert_violation([LIST, tool("drop_everything")], Violation.UNKNOWN_TOOL, 1)
    assert "drop_everything" in traj.termination_reason


async def test_arguments_not_matching_the_tool_schema() -> None:
    await assert_violation(
        [LIST, tool("get_note", {"note_id": "1"})], Violation.INVALID_ARGUMENTS, 1
    )


async def test_malformed_json() -> None:
    bad = '<tool_call>{"name": "list_tools", "arguments": {</tool_call>'
    await assert_violation([bad], Violation.MALFORMED_JSON, 0)


async def test_call_tool_arguments_string_that_is_not_json() -> None:
    bad = call("call_tool", {"tool_name": "get_note", "arguments": "note 1 please"})
    await assert_violation([LIST, bad], Violation.MALFORMED_JSON, 1)


async def test_several_calls_in_one_turn() -> None:
    await assert_violation([LIST, GET1 + GET1], Violation.MULTIPLE_CALLS, 1)


async def test_empty_reasoning_when_required() -> None:
    checks = StepChecks(require_reasoning=True)
    await assert_violation(
        [LIST, tool("get_note", {"note_id": 1}, think=None)],
        Violation.EMPTY_REASONING,
        1,
        checks=checks,
    )


async def test_reasoning_not_required_by_default() -> None:
    traj, _, _ = await run(
        [call("list_tools", think=None), tool("get_note", {"note_id": 1}, None), "x"]
    )
    assert traj.termination is Termination.FINAL_ANSWER


async def test_final_answer_before_any_successful_call() -> None:
    await assert_violation(["I think it is milk."], Violation.NO_SUCCESSFUL_CALL, 0)
    await assert_violation([LIST, "milk"], Violation.NO_SUCCESSFUL_CALL, 1)
    await assert_violation(
        [LIST, tool("get_note", {"note_id": 99}), "milk"], Violation.NO_SUCCESSFUL_CALL, 2
    )


async def test_tool_error_response_when_checked() -> None:
    checks = StepChecks(fail_on_tool_error=True)
    traj = await assert_violation(
        [LIST, tool("get_note", {"note_id": 99})], Violation.TOOL_ERROR_RESPONSE, 1, checks=checks
    )
    assert traj.steps[1].result.error_type == "not_found"


async def test_tool_error_response_is_recoverable_by_default() -> None:
    traj, _, _ = await run([LIST, tool("get_note", {"note_id": 99}), GET1, "milk"])
    assert traj.termination is Termination.FINAL_ANSWER
    assert "Error (not_found)" in traj.messages[5].content


async def test_switched_off_checks_let_the_environment_answer() -> None:
    checks = StepChecks(known_tools=False, valid_arguments=False, list_tools_first_and_once=False)
    traj, _, env = await run(
        [GET1, tool("nope"), tool("get_note", {"note_id": "x"}), LIST, LIST, "a"], checks=checks
    )
    assert traj.termination is Termination.FINAL_ANSWER
    assert [s.result.error_type for s in traj.steps[:3]] == [
        None,
        "unknown_tool",
        "invalid_arguments",
    ]


async def test_known_tools_holds_without_list_tools_when_the_prompt_described_them() -> None:
    """list_tools_first_and_once off (the tools were in the prompt) must not switch off
    known_tools and valid_arguments: the episode asks the environment for its tools itself."""
    checks = StepChecks(list_tools_first_and_once=False)
    traj = await assert_violation([tool("nope")], Violation.UNKNOWN_TOOL, 0, checks=checks)
    assert not traj.steps[0].result
    await assert_violation(
        [tool("get_note", {"note_id": "x"})], Violation.INVALID_ARGUMENTS, 0, checks=checks
    )
    traj, _, env = await run([GET1, "milk"], checks=checks)
    assert traj.termination is Termination.FINAL_ANSWER
    assert env.calls == [("get_note", {"note_id": 1})]


async def test_environment_error_is_not_the_agents_fault() -> None:
    env = FakeNotesEnv(fail_tools={"get_note"})
    traj, _, _ = await run([LIST, GET1], env=env)
    assert traj.termination is Termination.ENVIRONMENT_ERROR
    assert traj.steps[-1].violation is None
    assert "unavailable" in traj.termination_reason


async def test_model_error_after_backend_gives_up() -> None:
    traj, _, _ = await run([LIST])  # the script runs out on the second turn: LLMError
    assert traj.termination is Termination.MODEL_ERROR
    assert "script exhausted" in traj.termination_reason
    assert len(traj.steps) == 1


async def test_max_steps() -> None:
    traj, _, _ = await run([LIST] + [GET1] * 5, max_steps=4)
    assert traj.termination is Termination.MAX_STEPS
    assert len(traj.steps) == 4


async def test_the_settings_are_recorded_on_the_trajectory() -> None:
    traj, _, _ = await run([LIST, GET1, "milk"], max_steps=7, history_window=None, lenient=True)
    assert traj.metadata["max_steps"] == 7
    assert traj.metadata["history_window"] is None
    assert traj.metadata["lenient"] is True
    assert traj.metadata["format"] == EpisodeSettings().fmt == "hermes"


async def test_lenient_mode_repairs_instead_of_terminating() -> None:
    sloppy = "<tool_call>{'name': 'call_tool', 'arguments': {'tool_name': 'get_note', 'arguments': {'note_id': 1,},}}"
    direct = call("get_note", {"note_id": 1})
    traj, _, env = await run([LIST, sloppy, direct, "milk"], lenient=True)
    assert traj.termination is Termination.FINAL_ANSWER, traj.termination_reason
    assert env.calls == [("get_note", {"note_id": 1})] * 2


# ------------------------------------------------------------------ history and formats


async def test_prompt_is_truncated_to_the_window() -> None:
    replies = [LIST] + [GET1] * 6 + ["milk"]
    _, backend, _ = await run(replies, history_window=2)
    prompts = backend.calls
    # prefix (2) + first exchange (2) + at most 2 turns of 2 messages
    assert [len(p) for p in prompts] == [2, 4, 6, 8, 8, 8, 8, 8]
    last = prompts[-1]
    assert last[2].tool_calls == [] and "list_tools" in last[2].content


async def test_window_none_shows_everything() -> None:
    _, backend, _ = await run([LIST, GET1, GET1, GET1, "milk"], history_window=None)
    assert [len(p) for p in backend.calls] == [2, 4, 6, 8, 10]


async def test_openai_format_sends_meta_tools_and_tool_call_ids() -> None:
    seen: list = []

    def first(messages: list) -> ChatResponse:
        seen.append(messages)
        return ChatResponse(tool_calls=[ToolCall(id="abc", name="list_tools")])

    traj, _, _ = await run(
        [
            first,
            ChatResponse(
                tool_calls=[
                    ToolCall(
                        name="call_tool",
                        arguments={"tool_name": "get_note", "arguments": {"note_id": 1}},
                    )
                ]
            ),
            ChatResponse(content="milk"),
        ],
        fmt="openai",
    )
    assert traj.termination is Termination.FINAL_ANSWER
    assert traj.messages[3].tool_call_id == "abc"
    assert traj.messages[5].tool_call_id == "call_1"  # an id is given when the model sent none
    assert traj.messages[4].tool_calls[0].id == "call_1"
    assert "<tools>" not in traj.messages[0].content


async def test_policy_passes_sampling_settings() -> None:
    class Recorder(ScriptedBackend):
        async def chat(self, messages, **kw):  # type: ignore[no-untyped-def]
            self.kw = kw
            return await super().chat(messages, **kw)

    backend = Recorder(["hi"])
    await run_episode(Policy(backend, temperature=0.7, max_tokens=33), FakeNotesEnv(), TASK)
    assert backend.kw["temperature"] == 0.7 and backend.kw["max_tokens"] == 33
