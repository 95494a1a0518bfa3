"""Conversations with a (simulated) user: the scripted plan of a reference conversation, and
the communication checks decided by code.

A conversational task (:attr:`awm_core.models.Task.user`) is done when the database
ends right *and* the agent talked to the user as the task's policy demands:

* every :class:`~awm_core.models.SpokenFact` in ``must_tell`` was said to the user;
* no :class:`~awm_core.models.HiddenFact` was guessed: a tool call passed its value in
  its ``argument`` before the user had said it (a right guess is still a guess);
* every call of a ``confirm_before`` tool came after the agent asked the user and got
  an answer, *after* the user last told it one of the facts that call uses (acting
  on the facts without checking back is the "acted before asking" failure).

The same checks judge a live episode (:func:`events_from_trajectory`) and a scripted
proof (:func:`scripted_events`, what catalog validation replays), so a task is
proven by exactly the code that will grade agents on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from awm_core.models import AgentMessage, Task, ToolCallStep, Trajectory

SIMULATED_USER = "simulated_user"
"""``Message.name`` of a user turn written by a simulator (role ``user``), so views and
training can tell the user's replies from the task's opening message and tool results."""

SEND_MESSAGE_TO_USER = "send_message_to_user"
"""The meta-tool an agent calls to talk to the user when it is in tool-calling mode."""

STOP_TOKEN = "###STOP###"  # noqa: S105 - a protocol marker, not a secret
"""What a user simulator writes to end the conversation (τ²-bench's convention)."""


@dataclass(frozen=True)
class Event:
    """One thing that happened in a conversation, in order.

    ``agent``: the agent said ``text`` to the user; ``user``: the user said ``text``;
    ``call``: the agent called environment tool ``tool`` with ``arguments``.
    """

    kind: Literal["agent", "user", "call"]
    text: str = ""
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


PlanItem = ToolCallStep | AgentMessage


def conversation_plan(
    solution: Sequence[ToolCallStep], messages: Sequence[AgentMessage]
) -> list[PlanItem]:
    """The agent's turns in order: each message placed after ``after_calls`` tool calls.

    Messages placed past the last call come at the end, in their given order.
    """
    plan: list[PlanItem] = []
    for k in range(len(solution) + 1):
        plan += [m for m in messages if m.after_calls == k]
        if k < len(solution):
            plan.append(solution[k])
    plan += [m for m in messages if m.after_calls > len(solution)]
    return plan


def scripted_events(
    opening: str,
    solution: Sequence[ToolCallStep],
    messages: Sequence[AgentMessage],
    replies: Sequence[str],
) -> list[Event]:
    """The events of a scripted conversation: the plan, each agent message answered by the
    next reply (the stop token removed); after the user stopped, nothing more happens."""
    events = [Event("user", opening)]
    left = list(replies)
    for item in conversation_plan(solution, messages):
        if isinstance(item, AgentMessage):
            events.append(Event("agent", item.text))
            reply = left.pop(0) if left else STOP_TOKEN
            events.append(Event("user", strip_stop(reply)))
            if is_stop(reply):
                break
        else:
            events.append(Event("call", tool=item.tool, arguments=dict(item.arguments)))
    return events


def is_stop(text: str) -> bool:
    """Whether a user turn ends the conversation."""
    return STOP_TOKEN in text


def strip_stop(text: str) -> str:
    """A user turn without the stop token (what the agent and the record show)."""
    return text.replace(STOP_TOKEN, "").strip()


def events_from_trajectory(trajectory: Trajectory) -> list[Event]:
    """The events of a recorded episode (the opening, then each step's turn and reply)."""
    events = [Event("user", trajectory.messages[1].content if len(trajectory.messages) > 1 else "")]
    for step in trajectory.steps:
        call = step.tool_call
        reply = None if step.result is None else step.result.content
        if call is None:
            if step.violation is None and step.assistant.content:
                events.append(Event("agent", step.assistant.content))
                if isinstance(reply, str):
                    events.append(Event("user", reply))
        elif call.name == SEND_MESSAGE_TO_USER:
            events.append(Event("agent", str(call.arguments.get("message", ""))))
            if isinstance(reply, str):
                events.append(Event("user", reply))
        elif call.name == "call_tool" and step.violation is None:
            args = call.arguments.get("arguments", {})
            events.append(
                Event(
                    "call",
                    tool=str(call.arguments.get("tool_name", "")),
                    arguments=args if isinstance(args, dict) else {},
                )
            )
    return events


def agent_text(events: Sequence[Event]) -> str:
    """Everything the agent said to the user, one message a line (a conversation's answer)."""
    return "\n".join(e.text for e in events if e.kind == "agent")


@dataclass(frozen=True)
class CommunicationResult:
    """The communication checks' outcome; ``passed`` only when every check holds."""

    missing_facts: list[str]
    guessed: list[str]
    unconfirmed: list[str]

    @property
    def passed(self) -> bool:
        return not (self.missing_facts or self.guessed or self.unconfirmed)

    def evidence(self) -> dict[str, Any]:
        """The outcome as verifier evidence (JSON)."""
        return {
            "passed": self.passed,
            "missing_facts": self.missing_facts,
            "guessed": self.guessed,
            "unconfirmed": self.unconfirmed,
        }


def _mentions(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def _same(argument: Any, value: str) -> bool:
    return str(argument).strip().lower() == value.strip().lower()


def check_communication(task: Task, events: Sequence[Event]) -> CommunicationResult:
    """Decide the task's communication checks on a conversation (see the module docstring)."""
    user = task.user
    if user is None:
        return CommunicationResult([], [], [])
    said = [e.text for e in events if e.kind == "agent"]
    missing = [
        f.fact for f in user.must_tell if not any(re.search(f.pattern, s, re.I) for s in said)
    ]
    guessed: list[str] = []
    unconfirmed: list[str] = []
    heard = ""  # everything the user said so far
    anchor = 0  # events before this index do not count as asking first
    asked_at: int | None = None  # index of the last agent message after the anchor
    answered = False
    last_confirmed_call = 0
    for i, event in enumerate(events):
        if event.kind == "agent":
            asked_at, answered = i, False
        elif event.kind == "user":
            if asked_at is not None:
                answered = True
            if any(
                _mentions(event.text, f.value) and not _mentions(heard, f.value)
                for f in user.hidden_facts
            ):
                anchor = i  # new facts (not repeated ones): a confirmation must come after
            heard += "\n" + event.text
        else:
            uses = [
                f
                for f in user.hidden_facts
                if f.argument is not None
                and f.argument in event.arguments
                and _same(event.arguments[f.argument], f.value)
            ]
            guessed += [
                f"{event.tool} used {f.name} ({f.value}) before the user said it"
                for f in uses
                if not _mentions(heard, f.value)
            ]
            if event.tool in user.confirm_before:
                start = max(anchor, last_confirmed_call)
                if not (asked_at is not None and asked_at > start and answered):
                    unconfirmed.append(f"{event.tool} was called without asking the user first")
                last_confirmed_call = i
                asked_at, answered = None, False
    return CommunicationResult(missing, guessed, unconfirmed)
