"""The τ²-bench oracle built from golden actions, and pass^k; no ``tau2`` import here.

A task's golden actions are a sequence of tool calls by the agent (``assistant``) and
by the user (``user``, telecom's device actions). The oracle agent makes its own calls
in order and, before each run of user actions, sends one message asking the user to
do them; the oracle user performs the k-th run of its actions when it receives the
agent's k-th request, and stops (``###STOP###``) after the agent's closing message,
which carries the information the task says must be communicated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any

DOMAINS = ("airline", "retail", "telecom")
MESSAGE_TOOL = "send_message_to_user"
"""awm mode's tool for talking to the user; its result is the user's reply."""

STOP = "###STOP###"
GREETING_REPLY = "Hi, I need some help with my account."


@dataclass(frozen=True)
class GoldenAction:
    """One golden action of a task (``requestor``: ``assistant`` or ``user``)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    requestor: str = "assistant"


@dataclass(frozen=True)
class ScriptStep:
    """One oracle agent turn: a tool ``call`` or a message (``say``) to the user."""

    kind: str
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


def golden_actions(actions: Sequence[Mapping[str, Any]]) -> list[GoldenAction]:
    """τ²'s ``evaluation_criteria.actions`` (as dicts) as :class:`GoldenAction`s."""
    return [
        GoldenAction(
            str(a["name"]), dict(a.get("arguments") or {}), str(a.get("requestor", "assistant"))
        )
        for a in actions
    ]


def ground_truth_actions(task: Any) -> int:
    """How many golden actions a τ² task lists, the agent's and the user's (the paper's
    Table 5 buckets τ²-bench by the number of ground-truth actions)."""
    criteria = getattr(task, "evaluation_criteria", None)
    return len(criteria.actions or []) if criteria is not None else 0


def user_groups(actions: Sequence[GoldenAction]) -> list[list[GoldenAction]]:
    """The runs of consecutive user actions, in order."""
    groups: list[list[GoldenAction]] = []
    previous_user = False
    for action in actions:
        if action.requestor == "user":
            if not previous_user:
                groups.append([])
            groups[-1].append(action)
        previous_user = action.requestor == "user"
    return groups


def closing_message(communicate: Sequence[str]) -> str:
    """The oracle's last message: what must be communicated, then the hand-over."""
    info = "; ".join(str(c) for c in communicate)
    return (f"Here is what you asked for: {info}. " if info else "") + "Is there anything else?"


def agent_script(
    actions: Sequence[GoldenAction], communicate: Sequence[str] = ()
) -> list[ScriptStep]:
    """The oracle agent's turns: its calls, one request per run of user actions, the closing."""
    script: list[ScriptStep] = []
    previous_user = False
    for action in actions:
        if action.requestor == "user":
            if not previous_user:
                script.append(ScriptStep("say", text="Please do the following on your side."))
        else:
            script.append(ScriptStep("call", action.name, dict(action.arguments)))
        previous_user = action.requestor == "user"
    script.append(ScriptStep("say", text=closing_message(communicate)))
    return script


@dataclass(frozen=True)
class UserTurn:
    """The oracle user's next turn: ``text``, or ``calls`` (user tool calls)."""

    text: str = ""
    calls: tuple[GoldenAction, ...] = ()


def oracle_user_turn(
    agent_messages: int, last_was_tool_result: bool, groups: Sequence[Sequence[GoldenAction]]
) -> UserTurn:
    """What the oracle user says after the agent's ``agent_messages``-th text message
    (the greeting is the first): the reason for calling, then the k-th run of user
    actions for the k-th request, then ``###STOP###``."""
    if last_was_tool_result:
        return UserTurn(text="Done, I did that.")
    if agent_messages <= 1:
        return UserTurn(text=GREETING_REPLY)
    k = agent_messages - 2
    if k < len(groups):
        return UserTurn(calls=tuple(groups[k]))
    return UserTurn(text=STOP)


def pass_hat_k(num_trials: int, successes: int, k: int) -> float:
    """τ²'s pass^k for one task: the chance that k trials drawn from ``num_trials`` all pass."""
    if num_trials < k:
        raise ValueError(f"pass^{k} needs at least {k} trials, got {num_trials}")
    return comb(successes, k) / comb(num_trials, k)


def corrupt_script(script: list[ScriptStep], how: str | None) -> list[ScriptStep]:
    """The oracle with one fault: ``drop_argument`` (first call loses its first argument)
    or ``rename_tool`` (first call's tool renamed)."""
    if how is None:
        return script
    out = list(script)
    for i, step in enumerate(out):
        if step.kind != "call":
            continue
        if how == "rename_tool":
            out[i] = ScriptStep("call", f"{step.name}_renamed", step.arguments)
            return out
        if how == "drop_argument" and step.arguments:
            first = next(iter(step.arguments))
            out[i] = ScriptStep(
                "call", step.name, {k: v for k, v in step.arguments.items() if k != first}
            )
            return out
    return out
