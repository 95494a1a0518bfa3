"""Conversational tasks: the user section, user simulators, the loop's user turns, the
communication checks and history truncation of user turns."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from awm_core.contracts import UserSimulator
from awm_core.conversation import (
    SEND_MESSAGE_TO_USER,
    SIMULATED_USER,
    STOP_TOKEN,
    Event,
    check_communication,
    events_from_trajectory,
    scripted_events,
)
from awm_core.episode import EpisodeSettings, Policy, ReferencePolicy, meta_tools, run_episode
from awm_core.errors import PluginRegistrationError, UnknownNameError, UserSimulatorError
from awm_core.fake_env import FakeNotesEnv
from awm_core.history import split_turns, training_samples, truncate_history
from awm_core.hookspecs import hookimpl
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import AgentMessage, Message, Task, Termination, ToolCallStep
from awm_core.registry import get_user_simulator, list_user_simulators
from awm_core.user_sim import LLMUser, ScriptedUser, user_prompt

STOP = STOP_TOKEN


def rename_task(**user: object) -> Task:
    """Rename a note the user names only when asked; renaming needs their yes."""
    section = {
        "opening": "Hi, can you rename one of my notes?",
        "goal": "Rename the note with id 2 to 'Daily sync'.",
        "hidden_facts": [
            {"name": "note id", "value": "2", "argument": "note_id"},
            {"name": "new title", "value": "Daily sync", "argument": "title"},
        ],
        "replies": ["Note 2, please call it 'Daily sync'.", "Yes, go ahead.", "Thanks! " + STOP],
        "reference_messages": [
            {"after_calls": 0, "text": "Sure. Which note, and what should it be called?"},
            {"after_calls": 1, "text": "Note 2 is 'Standup'. Rename it to 'Daily sync'?"},
            {"after_calls": 2, "text": "Done: note 2 is now called 'Daily sync'."},
        ],
        "must_tell": [{"fact": "the note is renamed", "pattern": "daily sync"}],
        "confirm_before": ["update_note"],
        **user,
    }
    return Task.model_validate(
        {
            "id": "conv_rename",
            "instruction": "Rename note 2 to 'Daily sync' after asking which note and confirming.",
            "complexity": "easy",
            "reference_solution": [
                {"tool": "get_note", "arguments": {"note_id": 2}},
                {"tool": "update_note", "arguments": {"note_id": 2, "title": "Daily sync"}},
            ],
            "user": section,
        }
    )


def say(text: str) -> str:
    return f"<think>talk</think>\n{text}"


def tool(name: str, args: dict | None = None) -> str:
    body = json.dumps({"name": "call_tool", "arguments": {"tool_name": name, "arguments": args}})
    return f"<think>act</think>\n<tool_call>\n{body}\n</tool_call>"


LIST = '<think>list</think>\n<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'


# --------------------------------------------------------------------------- the task format


def test_a_task_without_a_user_section_is_not_conversational() -> None:
    task = Task(id="t", instruction="Read note 1.", complexity="easy")
    assert not task.conversational and task.user is None
    assert [t.name for t in meta_tools(task)] == ["list_tools", "call_tool"]


def test_a_user_section_makes_a_task_conversational_with_a_third_meta_tool() -> None:
    task = rename_task()
    assert task.conversational
    assert [t.name for t in meta_tools(task)] == ["list_tools", "call_tool", SEND_MESSAGE_TO_USER]


def test_the_user_section_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="secret"):
        rename_task(secret="x")


# --------------------------------------------------------------------------- simulators


def test_builtin_user_simulators_are_registered_as_plugins() -> None:
    assert {"scripted", "llm"} <= set(list_user_simulators())
    with pytest.raises(UnknownNameError, match="scriptd"):
        get_user_simulator("scriptd", rename_task())


async def test_the_scripted_user_replies_in_order_then_stops() -> None:
    user = get_user_simulator("scripted", rename_task())
    assert isinstance(user, UserSimulator)
    got = [await user.reply([]) for _ in range(4)]
    assert got == [
        "Note 2, please call it 'Daily sync'.",
        "Yes, go ahead.",
        "Thanks! " + STOP,
        STOP,
    ]


def test_a_scripted_user_needs_replies() -> None:
    with pytest.raises(UserSimulatorError, match=r"no user\.replies"):
        ScriptedUser(rename_task(replies=None))
    with pytest.raises(UserSimulatorError, match="no user section"):
        ScriptedUser(Task(id="t", instruction="x", complexity="easy"))


def test_the_llm_user_needs_its_own_model() -> None:
    with pytest.raises(UserSimulatorError, match="its own model"):
        get_user_simulator("llm", rename_task())


def test_the_user_prompt_carries_the_goal_the_facts_and_the_stop_token() -> None:
    prompt = user_prompt(rename_task().user)  # type: ignore[arg-type]
    assert "Rename the note with id 2" in prompt
    assert "- note id: 2" in prompt and "- new title: Daily sync" in prompt
    assert STOP in prompt


async def test_the_llm_user_speaks_as_the_user_with_roles_swapped() -> None:
    backend = ScriptedBackend(["<think>hm</think>It's note 2."])
    user = LLMUser(rename_task(), backend)
    dialogue = [
        Message(role="user", content="Hi, can you rename one of my notes?"),
        Message(role="assistant", content="Which note?"),
    ]
    assert await user.reply(dialogue) == "It's note 2."
    sent = backend.calls[0]
    assert sent[0].role == "system" and STOP in sent[0].content
    # the opening is the simulator's own turn; the agent's question comes to it as "user"
    assert [(m.role, m.content) for m in sent[2:]] == [
        ("assistant", "Hi, can you rename one of my notes?"),
        ("user", "Which note?"),
    ]


async def test_a_plugin_can_register_a_user_simulator(register_plugin) -> None:  # type: ignore[no-untyped-def]
    class Echo:
        name = "echo"

        def __init__(self, task: Task) -> None:
            self.task = task

        async def reply(self, dialogue: list[Message]) -> str:
            return f"you said: {dialogue[-1].content} {STOP}"

    class Plugin:
        @hookimpl
        def register_user_simulators(self, register):  # type: ignore[no-untyped-def]
            register("echo", Echo)

    register_plugin(Plugin(), name="echo-users")
    user = get_user_simulator("echo", rename_task())
    traj = await run_episode(
        Policy(ScriptedBackend([say("Hello there")])), FakeNotesEnv(), rename_task(), user=user
    )
    assert traj.steps[0].result is not None
    assert traj.steps[0].result.content == "you said: Hello there"


def test_a_plugin_registering_no_factory_is_named(register_plugin) -> None:  # type: ignore[no-untyped-def]
    class Plugin:
        @hookimpl
        def register_user_simulators(self, register):  # type: ignore[no-untyped-def]
            register("broken", "not a factory")

    register_plugin(Plugin(), name="broken-users")
    with pytest.raises(PluginRegistrationError, match="broken-users"):
        list_user_simulators()


# --------------------------------------------------------------------------- the episode loop


async def test_the_reference_conversation_runs_through_the_loop() -> None:
    env = FakeNotesEnv()
    task = rename_task()
    traj = await run_episode(ReferencePolicy(task), env, task)
    assert traj.termination is Termination.FINAL_ANSWER
    assert traj.termination_reason == "the user ended the conversation"
    assert traj.messages[1].content == "Hi, can you rename one of my notes?"
    replies = [m.content for m in traj.messages if m.name == SIMULATED_USER]
    assert replies == ["Note 2, please call it 'Daily sync'.", "Yes, go ahead.", "Thanks!"]
    assert env.state["notes"][2]["title"] == "Daily sync"
    assert "Done: note 2 is now called 'Daily sync'." in (traj.final_answer or "")
    assert traj.metadata["user_simulator"] == "scripted"
    assert check_communication(task, events_from_trajectory(traj)).passed


async def test_a_plain_text_turn_before_any_call_goes_to_the_user() -> None:
    """Without a user it would end the episode (no successful call); here it is a question."""
    task = rename_task()
    backend = ScriptedBackend([say("Which note?"), say("Still there?"), say("OK")])
    traj = await run_episode(Policy(backend), FakeNotesEnv(), task)
    assert traj.termination is Termination.FINAL_ANSWER
    assert [s.violation for s in traj.steps] == [None, None, None]
    assert [s.result.content for s in traj.steps if s.result] == [
        "Note 2, please call it 'Daily sync'.",
        "Yes, go ahead.",
        "Thanks!",
    ]


async def test_send_message_to_user_returns_the_reply_as_its_result() -> None:
    task = rename_task(replies=["It's note 2. " + STOP])
    ask = json.dumps({"name": SEND_MESSAGE_TO_USER, "arguments": {"message": "Which note?"}})
    backend = ScriptedBackend([LIST, f"<think>ask</think>\n<tool_call>\n{ask}\n</tool_call>"])
    traj = await run_episode(Policy(backend), FakeNotesEnv(), task)
    assert traj.termination_reason == "the user ended the conversation"
    assert traj.steps[1].result is not None and traj.steps[1].result.content == "It's note 2."
    assert "send_message_to_user" in traj.messages[0].content  # offered in the system prompt
    events = events_from_trajectory(traj)
    assert [e.kind for e in events] == ["user", "agent", "user"]


async def test_a_failing_user_simulator_is_a_model_error_not_the_agents() -> None:
    class Broken:
        name = "broken"

        async def reply(self, dialogue: list[Message]) -> str:
            raise UserSimulatorError("no answer")

    traj = await run_episode(
        Policy(ScriptedBackend([say("Hello?")])), FakeNotesEnv(), rename_task(), user=Broken()
    )
    assert traj.termination is Termination.MODEL_ERROR
    assert "user simulator" in (traj.termination_reason or "")


async def test_the_step_budget_still_ends_a_conversation() -> None:
    task = rename_task(replies=["hm"] * 10)
    backend = ScriptedBackend([say("Which note?")] * 3)
    traj = await run_episode(
        Policy(backend), FakeNotesEnv(), task, settings=EpisodeSettings(max_steps=3)
    )
    assert traj.termination is Termination.MAX_STEPS
    assert traj.final_answer == "Which note?\nWhich note?\nWhich note?"


# --------------------------------------------------------------------------- communication checks


def _events(messages: list[tuple[int, str]], replies: list[str], solution=None) -> list[Event]:  # type: ignore[no-untyped-def]
    task = rename_task()
    steps = solution if solution is not None else task.reference_solution
    msgs = [AgentMessage(after_calls=a, text=t) for a, t in messages]
    return scripted_events(task.user.opening, steps, msgs, replies)  # type: ignore[union-attr]


def test_the_reference_conversation_passes_the_checks() -> None:
    task = rename_task()
    user = task.user
    assert user is not None
    events = scripted_events(
        user.opening, task.reference_solution or [], user.reference_messages, user.replies or []
    )
    assert check_communication(task, events).passed


def test_acting_before_asking_is_rejected() -> None:
    events = _events(
        [(0, "Which note, and what title?"), (2, "Done: 'Daily sync'.")],
        ["Note 2, please call it 'Daily sync'.", "OK " + STOP],
    )
    result = check_communication(rename_task(), events)
    assert result.unconfirmed == ["update_note was called without asking the user first"]
    assert not result.guessed and not result.missing_facts


def test_guessing_a_parameter_is_rejected_even_when_right() -> None:
    events = _events([(2, "Renamed note 2 to 'Daily sync'.")], ["Oh. " + STOP])
    result = check_communication(rename_task(), events)
    assert any("note id (2)" in g for g in result.guessed)
    assert not result.passed


def test_a_fact_not_told_is_missing() -> None:
    events = _events(
        [(0, "Which note?"), (1, "Rename note 2?"), (2, "All set.")],
        ["Note 2, please call it 'Daily sync'.", "Yes.", "Bye " + STOP],
    )
    assert check_communication(rename_task(), events).missing_facts == ["the note is renamed"]


def test_a_user_repeating_a_known_fact_in_their_yes_still_confirms() -> None:
    events = _events(
        [(0, "Which note?"), (1, "Rename note 2 to 'Daily sync'?"), (2, "Daily sync it is.")],
        ["Note 2, please call it 'Daily sync'.", "Yes, note 2.", "Bye " + STOP],
    )
    assert check_communication(rename_task(), events).passed


def test_nothing_happens_after_the_user_stops() -> None:
    events = _events([(0, "Which note?"), (1, "Rename it?")], ["Never mind. " + STOP, "Yes."])
    assert [e.kind for e in events] == ["user", "agent", "user"]


# --------------------------------------------------------------------------- history


async def test_user_turns_are_observations_of_the_turn_that_addressed_them() -> None:
    task = rename_task()
    traj = await run_episode(ReferencePolicy(task), FakeNotesEnv(), task)
    prefix, turns = split_turns(traj.messages)
    assert [m.role for m in prefix] == ["system", "user"]
    assert [m.role for m in turns[1]] == ["assistant", "user"]
    assert turns[1][1].name == SIMULATED_USER
    kept = truncate_history(traj.messages, 1)
    # the first turn (list_tools) and the last one stay; a middle user reply goes with its turn
    assert "Yes, go ahead." not in [m.content for m in kept]
    assert kept[-1].content == "Thanks!"
    targets = [s.target.role for s in training_samples(traj.messages, None)]
    assert set(targets) == {"assistant"} and len(targets) == len(traj.steps)


def test_the_scripted_plan_places_messages_among_calls() -> None:
    from awm_core.conversation import conversation_plan

    steps = [ToolCallStep(tool="a"), ToolCallStep(tool="b")]
    msgs = [AgentMessage(after_calls=2, text="end"), AgentMessage(after_calls=0, text="start")]
    plan = conversation_plan(steps, msgs)
    names = [p.text if isinstance(p, AgentMessage) else p.tool for p in plan]
    assert names == ["start", "a", "b", "end"]
