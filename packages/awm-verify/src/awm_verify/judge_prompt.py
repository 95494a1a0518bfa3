"""The judge's prompt: task, criteria, a compact trajectory, the state diff and verifier evidence.

Everything is bounded (steps shown, characters per tool result, diff size,
evidence size) and every cut is announced, so a long episode never crowds out
the evidence and the judge knows when it sees only part of the picture.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from awm_core.dbdiff import DatabaseDiff, RenderLimits
from awm_core.models import Task, Trajectory, VerdictLabel, VerifierResult
from awm_verify.replay import unwrap_call

LABELS = tuple(label.value for label in VerdictLabel)

SYSTEM_PROMPT = """\
You grade whether an AI agent accomplished a task in a database-backed application. \
The agent acted only through the application's tools; you see what it did, and, when \
available, the exact changes in the application's database and the output of a \
verification program written for this task.

Choose exactly one label:
- "Completed": the task's goal holds at the end. For a question, the final answer is \
correct and supported by the data.
- "Partially Completed": some required parts were achieved and others were not.
- "Agent Error": the goal was not achieved because of the agent: wrong record or id, \
wrong values, skipped steps, unrequested changes, or a claim of success the data does \
not support.
- "Environment Error": the goal was not achieved because the application failed: \
internal errors, a tool that contradicts the database, a tool that cannot work.

How to weigh the evidence:
- The database changes are the ground truth of what happened. If the agent reports \
success but the intended record is unchanged, or a different record changed, the task \
is not completed, however successful the tool calls looked.
- The verification output is strong evidence, but it can be wrong when the environment \
is imperfect. Example: a create operation that is idempotent leaves the database \
unchanged because the record already existed; if the final state satisfies the task \
and the agent's calls succeeded, that is "Completed" even when a verifier that expects \
a change says otherwise.
- If several labels seem to apply: "Completed" first, then "Environment Error", then \
"Agent Error", then "Partially Completed".

Reply with one JSON object and nothing else, exactly these two keys:
{"label": "<one of the four labels>", "reasoning": "<two or three sentences citing the evidence>"}"""


@dataclass(frozen=True)
class PromptLimits:
    """Bounds on each part of the judge prompt."""

    max_steps: int = 30
    head_steps: int = 4  # when steps are cut, keep the first few and the most recent
    max_arg_chars: int = 300
    max_result_chars: int = 500
    max_text_chars: int = 600
    max_evidence_chars: int = 4000
    diff: RenderLimits = field(default_factory=RenderLimits)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"


def _json(value: Any, limit: int) -> str:
    if isinstance(value, str):
        return _clip(value, limit)
    return _clip(json.dumps(value, ensure_ascii=False, default=str), limit)


def _step_lines(trajectory: Trajectory, lim: PromptLimits) -> list[str]:
    """One line per tool call (and its result); from ``steps`` or, failing that, ``messages``."""
    lines: list[str] = []
    if trajectory.steps:
        for step in trajectory.steps:
            if step.tool_call is None:
                continue
            inner = unwrap_call(step.tool_call)
            limit = lim.max_result_chars
            if inner is None:  # list_tools: its listing is long and says nothing about the task
                call, limit = "list_tools()", 120
            else:
                call = f"{inner.name}({_json(inner.arguments, lim.max_arg_chars)})"
            if step.result is None:
                outcome = "no result"
            elif step.result.is_error:
                kind = f" ({step.result.error_type})" if step.result.error_type else ""
                outcome = f"ERROR{kind}: {_json(step.result.content, limit)}"
            else:
                outcome = f"ok: {_json(step.result.content, limit)}"
            violation = f" [format violation: {step.violation}]" if step.violation else ""
            lines.append(f"call {call} -> {outcome}{violation}")
        return lines
    for msg in trajectory.messages:
        if msg.role == "assistant":
            for tc in msg.tool_calls:
                inner = unwrap_call(tc)
                if inner is None:
                    lines.append("call list_tools()")
                else:
                    lines.append(f"call {inner.name}({_json(inner.arguments, lim.max_arg_chars)})")
        elif msg.role == "tool":
            lines.append(f"  -> {_clip(msg.content, lim.max_result_chars)}")
    return lines


def render_trajectory(trajectory: Trajectory, lim: PromptLimits | None = None) -> str:
    """The episode as numbered tool calls with results, its end reason and the final answer."""
    lim = lim or PromptLimits()
    lines = _step_lines(trajectory, lim)
    shown: list[str] = []
    if len(lines) > lim.max_steps:
        tail = lim.max_steps - lim.head_steps
        shown += [f"[{i + 1}] {line}" for i, line in enumerate(lines[: lim.head_steps])]
        shown.append(f"… {len(lines) - lim.max_steps} tool call(s) omitted …")
        start = len(lines) - tail
        shown += [f"[{start + i + 1}] {line}" for i, line in enumerate(lines[start:])]
    else:
        shown = [f"[{i + 1}] {line}" for i, line in enumerate(lines)]
    ended = trajectory.termination.value
    if trajectory.termination_reason:
        ended += f" ({_clip(trajectory.termination_reason, 200)})"
    out = [f"{len(lines)} tool call(s); the episode ended by: {ended}"]
    out += shown or ["(no tool calls)"]
    answer = trajectory.final_answer
    out.append("Final answer: " + (_clip(answer, lim.max_text_chars) if answer else "(none)"))
    return "\n".join(out)


def render_conversation(task: Task, trajectory: Trajectory, lim: PromptLimits | None = None) -> str:
    """A conversational task's policy (what the user knew, what the agent had to tell them,
    what needed their yes) and the dialogue with the tool calls in between, in order: what
    the communication checks decided by code cannot (did it *ask* for confirmation?)."""
    from awm_core.conversation import events_from_trajectory

    lim = lim or PromptLimits()
    user = task.user
    assert user is not None
    lines: list[str] = []
    if user.hidden_facts:
        known = "; ".join(f"{f.name}: {f.value}" for f in user.hidden_facts)
        lines.append(f"Only the user knew (the agent had to ask, not guess): {known}")
    if user.must_tell:
        lines.append("The agent had to tell the user: " + "; ".join(f.fact for f in user.must_tell))
    if user.confirm_before:
        lines.append(
            "The agent had to ask the user and get their answer before calling: "
            + ", ".join(user.confirm_before)
        )
    for event in events_from_trajectory(trajectory):
        if event.kind == "call":
            lines.append(f"  (calls {event.tool}({_json(event.arguments, lim.max_arg_chars)}))")
        else:
            lines.append(f"{event.kind}: {_clip(event.text, lim.max_text_chars)}")
    return "\n".join(lines)


def render_verification(result: VerifierResult, lim: PromptLimits | None = None) -> str:
    """The verifier's verdict and evidence as JSON, or why it failed."""
    lim = lim or PromptLimits()
    if result.error is not None:
        return (
            f"The verification program {result.function} failed ({result.error.kind.value}): "
            f"{_clip(result.error.message, 500)}. Judge from the database changes and the trajectory."
        )
    verdict = {True: "complete", False: "not complete", None: "no verdict (evidence only)"}[
        result.complete
    ]
    evidence = json.dumps(result.evidence, ensure_ascii=False, indent=1, default=str)
    if len(evidence) > lim.max_evidence_chars:
        evidence = (
            evidence[: lim.max_evidence_chars]
            + f"\n…(evidence truncated: {len(evidence) - lim.max_evidence_chars} more chars)"
        )
    return f"Program {result.function} says: {verdict}\nEvidence:\n{evidence}"


def build_user_prompt(
    task: Task,
    trajectory: Trajectory,
    *,
    verification: VerifierResult | None = None,
    diff: DatabaseDiff | None = None,
    include_state: bool = True,
    limits: PromptLimits | None = None,
) -> str:
    """The user message: each part under a ``## `` heading so a reader (or test) can find it."""
    lim = limits or PromptLimits()
    parts = [f"## Task\n{task.instruction}"]
    if task.success_criteria:
        parts.append("## Success criteria\n" + "\n".join(f"- {c}" for c in task.success_criteria))
    if task.failure_criteria:
        parts.append("## Failure criteria\n" + "\n".join(f"- {c}" for c in task.failure_criteria))
    if task.expects_refusal:
        parts.append(
            "## Note\nThe right outcome of this task is to change nothing and explain why it cannot be done."
        )
    parts.append("## Agent trajectory\n" + render_trajectory(trajectory, lim))
    if task.user is not None:
        parts.append("## Conversation with the user\n" + render_conversation(task, trajectory, lim))
    if include_state:
        parts.append(
            "## Database changes (initial -> final)\n"
            + (diff.render(lim.diff) if diff is not None else "(not available)")
        )
        parts.append(
            "## Verification program\n"
            + (render_verification(verification, lim) if verification else "(not available)")
        )
    parts.append(
        "## Your answer\nReply with one JSON object: "
        '{"label": "Completed" | "Partially Completed" | "Agent Error" | "Environment Error", '
        '"reasoning": "..."}'
    )
    return "\n\n".join(parts)
