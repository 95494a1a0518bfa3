"""Validate a conversational task: its proofs are conversations, not bare tool calls.

The three properties are those of :mod:`awm_envs.validation.taskcheck`, with a
conversation in place of a call list: the reference conversation (the reference
solution's calls among ``user.reference_messages``, answered by the scripted
``user.replies``) completes the task; the untouched database, with nothing said,
does not; and the wrong conversations are rejected: the reference without its last
write, a bare success claim, wrong answers on read-only tasks, and the task's
``negative_examples`` (acting before asking, guessing a parameter...). A check
passes only when the bundle's verifier (given what the agent told the user as its
final answer) *and* the communication checks of :mod:`awm_core.conversation` pass,
which is exactly how a live episode is verified.
"""

from __future__ import annotations

from collections.abc import Sequence

from awm_core.conversation import (
    STOP_TOKEN,
    Event,
    agent_text,
    check_communication,
    scripted_events,
)
from awm_core.models import AgentMessage, Task, ToolCallStep, UserSection
from awm_envs.validation.replay import Replay, RuntimeEnvironment, replay_steps, without_last_write
from awm_envs.validation.results import TaskValidation, TrajectoryCheck
from awm_envs.validation.runner import VerifierRunner


def _check(
    runner: VerifierRunner,
    task: Task,
    kind: str,
    description: str,
    replay: Replay,
    events: Sequence[Event],
    expected_complete: bool,
) -> TrajectoryCheck:
    result = runner(task.verifier or "", replay.initial, replay.final, agent_text(events) or None)
    error = runner.failure(result)
    talk = check_communication(task, events)
    return TrajectoryCheck(
        kind=kind,
        description=description,
        tool_errors=replay.tool_errors,
        complete=error is None and bool(result.complete) and talk.passed,
        expected_complete=expected_complete,
        verifier_error=error,
        evidence={**result.evidence, "communication": talk.evidence()},
    )


def _said(user: UserSection, steps: Sequence[ToolCallStep], text: str) -> list[Event]:
    """``steps`` then one closing message ``text`` the user stops after."""
    messages = [AgentMessage(after_calls=len(steps), text=text)] if text else []
    return scripted_events(user.opening, steps, messages, [STOP_TOKEN])


def validate_conversation(
    env_id: str, env: RuntimeEnvironment, task: Task, run_verifier: VerifierRunner
) -> tuple[TaskValidation, Replay, None]:
    """Validate one conversational task (``task.user`` set); see the module docstring."""
    from awm_envs.validation.taskcheck import task_problems

    user = task.user
    assert user is not None
    steps = task.reference_solution or []
    problems, complexity_ok = task_problems(task)
    if user.replies is None:
        problems.append("conversational task has no user.replies to replay its reference with")
    replies = user.replies or []
    opening_only = [Event("user", user.opening)]

    untouched = replay_steps(env, [])
    initial = _check(
        run_verifier,
        task,
        "initial",
        "untouched database, nothing said",
        untouched,
        opening_only,
        False,
    )
    ref = replay_steps(env, steps)
    ref_events = scripted_events(user.opening, steps, user.reference_messages, replies)
    reference = _check(
        run_verifier, task, "reference", "reference conversation", ref, ref_events, True
    )
    if ref.tool_errors:
        problems.append(f"reference solution hit tool errors: {ref.tool_errors}")

    wrong: list[TrajectoryCheck] = []
    dropped = without_last_write(steps, env.write_tools)
    if dropped is not None:
        events = scripted_events(user.opening, dropped, user.reference_messages, replies)
        wrong.append(
            _check(
                run_verifier,
                task,
                "dropped_last_write",
                "reference conversation without its last write",
                replay_steps(env, dropped),
                events,
                False,
            )
        )
    claim = task.reference_answer or "Done, all taken care of."
    if any(s.tool in env.write_tools for s in steps) and not task.expects_refusal:
        wrong.append(
            _check(
                run_verifier,
                task,
                "no_action",
                "no tool calls, tells the user it is done",
                untouched,
                _said(user, [], claim),
                False,
            )
        )
    else:
        for answer in ("", "Done."):
            wrong.append(
                _check(
                    run_verifier,
                    task,
                    "wrong_answer",
                    f"reference calls, then only {answer!r} to the user",
                    ref,
                    _said(user, steps, answer),
                    False,
                )
            )
    for i, neg in enumerate(task.negative_examples):
        messages = neg.messages if neg.messages is not None else user.reference_messages
        neg_replies = neg.replies if neg.replies is not None else replies
        wrong.append(
            _check(
                run_verifier,
                task,
                "negative_example",
                neg.description or f"negative example {i}",
                replay_steps(env, neg.solution),
                scripted_events(user.opening, neg.solution, messages, neg_replies),
                False,
            )
        )

    checks = [initial, reference, *wrong]
    for c in checks:
        if c.verifier_error:
            problems.append(f"{c.kind}: verifier error: {c.verifier_error}")
        elif not c.ok:
            said, wanted = (
                ("complete", "not complete") if c.complete else ("not complete", "complete")
            )
            problems.append(
                f"{c.kind}: the verifier and communication checks said {said} after the "
                f"{c.description} ({c.evidence.get('communication')}); it should be {wanted}"
            )
    validation = TaskValidation(
        env_id=env_id,
        task_id=task.id,
        complexity=task.complexity,
        reference_calls=len(steps),
        expects_refusal=task.expects_refusal,
        complexity_ok=complexity_ok,
        initial_not_complete=initial.ok,
        reference_complete=reference.ok and not ref.tool_errors,
        wrong_rejected=bool(wrong) and all(c.ok for c in wrong),
        problems=problems,
        checks=checks,
    )
    return validation, ref, None
