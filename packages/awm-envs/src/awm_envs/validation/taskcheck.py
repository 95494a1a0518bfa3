"""Validate one task: (a) not already complete, (b) solved by its reference, (c) not lenient.

See :mod:`awm_envs.validation.validate` for what each property means; every
trajectory behind them is replayed on a fresh instance
(:mod:`awm_envs.validation.replay`) and judged by the task's verifier. A verifier
that only gathers evidence (AWM-1K sql mode) cannot judge: the code-augmented
judge decides from its evidence when a judge model is given
(:mod:`awm_envs.validation.judge`), else the trajectory is left undecided.
"""

from __future__ import annotations

from awm_core.models import Task, complexity_for_calls
from awm_envs.validation.judge import UNDECIDED_HINT, EvidenceJudge, is_undecided, replay_trajectory
from awm_envs.validation.replay import Replay, RuntimeEnvironment, replay_steps, without_last_write
from awm_envs.validation.results import TaskValidation, TrajectoryCheck
from awm_envs.validation.runner import VerifierRunner

# Wrong final answers tried on answer-judged tasks: none, empty, and a vague claim.
WRONG_ANSWERS: tuple[str | None, ...] = (None, "", "Done.")


def _check(
    runner: VerifierRunner,
    task: Task,
    kind: str,
    description: str,
    replay: Replay,
    final_answer: str | None,
    expected_complete: bool,
    judge: EvidenceJudge | None = None,
    env_id: str = "",
) -> TrajectoryCheck:
    """Run the verifier on one replay; an evidence-only result goes to ``judge`` (if any),
    whose decision the check collects in :meth:`TrajectoryCheck.settle`."""
    result = runner(task.verifier or "", replay.initial, replay.final, final_answer)
    error = runner.failure(result)
    check = TrajectoryCheck(
        kind=kind,
        description=description,
        tool_errors=replay.tool_errors,
        complete=error is None and bool(result.complete),
        expected_complete=expected_complete,
        verifier_error=error,
        evidence=result.evidence,
    )
    if error is not None or not is_undecided(result):
        return check
    check.complete = False
    if judge is None:
        check.decided_by = "undecided"
        return check
    trajectory = replay_trajectory(env_id, task, replay.steps, replay.results, final_answer)
    check.await_judge(judge.submit(task, trajectory, replay.initial, replay.final, result))
    return check


def _problem(c: TrajectoryCheck) -> str | None:
    """Why a check failed, in words (None when it did not, or was left undecided)."""
    if c.verifier_error:
        return f"{c.kind}: verifier error: {c.verifier_error}"
    if c.judge_error:
        return f"{c.kind}: judge error: {c.judge_error}"
    if c.undecided or c.ok:
        return None
    said, wanted = ("complete", "not complete") if c.complete else ("not complete", "complete")
    if c.judgement is not None:
        j = c.judgement
        if c.kind == "initial":  # the same words as the reference-free check's
            return (
                f"initial: the untouched initial database is already complete "
                f"(the judge {j.model} said {j.label}: {j.reasoning})"
            )
        return (
            f"{c.kind}: the judge ({j.model}) said {j.label} after the {c.description}; "
            f"it should be {wanted} (its reasoning: {j.reasoning})"
        )
    return f"{c.kind}: the verifier said {said} after the {c.description}; it should be {wanted}"


def validate_task(
    env_id: str,
    env: RuntimeEnvironment,
    task: Task,
    run_verifier: VerifierRunner,
    judge: EvidenceJudge | None = None,
) -> TaskValidation:
    """Validate one task against a loaded environment and its bundle's verifiers
    (and ``judge`` for verifiers that only gather evidence)."""
    return validate_task_with_replay(env_id, env, task, run_verifier, judge=judge)[0]


def task_problems(task: Task) -> tuple[list[str], bool]:
    """What is wrong with the task itself, and whether its complexity bucket fits its reference."""
    steps = task.reference_solution or []
    problems: list[str] = []
    if not task.verifier:
        problems.append("task names no verifier")
    if task.reference_solution is None:
        problems.append("task has no reference_solution")
    expected_bucket = complexity_for_calls(len(steps))
    complexity_ok = expected_bucket == task.complexity
    if not complexity_ok:
        problems.append(
            f"complexity is {task.complexity.value} but the reference solution has {len(steps)} "
            f"calls ({expected_bucket.value})"
        )
    return problems, complexity_ok


def _dropped_last_write(
    env: RuntimeEnvironment,
    task: Task,
    run_verifier: VerifierRunner,
    second_replay: bool,
    judge: EvidenceJudge | None = None,
    env_id: str = "",
) -> tuple[TrajectoryCheck | None, Replay | None]:
    """The reference solution without its last write, judged; and the second full replay, when
    it was made (the dropped trajectory is its prefix when the last write is the last step)."""
    steps = task.reference_solution or []
    dropped = without_last_write(steps, env.write_tools)
    if dropped is None:
        return None, None
    writes = [s for s in steps if s.tool in env.write_tools]
    second: Replay | None = None
    if second_replay and steps[-1].tool in env.write_tools:
        second = replay_steps(env, steps, snapshot_before=len(steps) - 1)
        dropped_replay = second.prefix()
    else:
        dropped_replay = replay_steps(env, dropped)
    check = _check(
        run_verifier,
        task,
        "dropped_last_write",
        f"reference solution without its last write ({writes[-1].tool})",
        dropped_replay,
        task.reference_answer,
        False,
        judge,
        env_id,
    )
    return check, second


def _wrong_claims(
    env: RuntimeEnvironment,
    task: Task,
    run_verifier: VerifierRunner,
    untouched: Replay,
    ref: Replay,
    judge: EvidenceJudge | None = None,
    env_id: str = "",
) -> list[TrajectoryCheck]:
    """Wrong final answers (answer-judged tasks) or "did nothing, claimed success" (write tasks),
    then the task's hand-written negative examples."""
    steps = task.reference_solution or []
    wrong: list[TrajectoryCheck] = []
    answer_judged = task.expects_refusal or not any(s.tool in env.write_tools for s in steps)
    if answer_judged:
        for answer in WRONG_ANSWERS:
            wrong.append(
                _check(
                    run_verifier,
                    task,
                    "wrong_answer",
                    f"reference calls with final answer {answer!r}",
                    ref,
                    answer,
                    False,
                    judge,
                    env_id,
                )
            )
    else:
        wrong.append(
            _check(
                run_verifier,
                task,
                "no_action",
                "no tool calls, final answer claims success",
                untouched,
                task.reference_answer or "Done.",
                False,
                judge,
                env_id,
            )
        )
    for i, neg in enumerate(task.negative_examples):
        wrong.append(
            _check(
                run_verifier,
                task,
                "negative_example",
                neg.description or f"negative example {i}",
                replay_steps(env, neg.solution),
                neg.final_answer,
                False,
                judge,
                env_id,
            )
        )
    return wrong


def _validate_unproven(
    env_id: str,
    env: RuntimeEnvironment,
    task: Task,
    run_verifier: VerifierRunner,
    judge: EvidenceJudge | None = None,
) -> tuple[TaskValidation, Replay, None]:
    """A task without a reference solution: the checks that need none.

    Its verifier must name a function that runs cleanly, and the untouched initial
    state must not already be complete (catches pre-solved tasks in the release;
    for an evidence-only verifier, ``judge`` decides whether it is).
    """
    problems = [] if task.verifier else ["task names no verifier"]
    untouched = replay_steps(env, [])
    initial = _check(
        run_verifier,
        task,
        "initial",
        "untouched initial database",
        untouched,
        None,
        False,
        judge,
        env_id,
    )
    initial.settle()
    if initial.verifier_error:
        problems.append(f"initial: verifier error: {initial.verifier_error}")
    elif initial.judge_error:
        problems.append(f"initial: judge error: {initial.judge_error}")
    elif initial.complete:
        said = ""
        if initial.judgement is not None:
            j = initial.judgement
            said = f" (the judge {j.model} said {j.label}: {j.reasoning})"
        problems.append(f"initial: the untouched initial database is already complete{said}")
    validation = TaskValidation(
        env_id=env_id,
        task_id=task.id,
        complexity=task.complexity,
        reference_calls=0,
        expects_refusal=task.expects_refusal,
        complexity_ok=True,  # unlabelled until a reference solution exists
        initial_not_complete=initial.ok,
        reference_complete=False,
        wrong_rejected=False,
        problems=problems,
        checks=[initial],
        unproven=True,
        notes=[UNDECIDED_HINT] if initial.undecided else [],
    )
    return validation, untouched, None


def validate_task_with_replay(
    env_id: str,
    env: RuntimeEnvironment,
    task: Task,
    run_verifier: VerifierRunner,
    second_replay: bool = False,
    require_proof: bool = True,
    judge: EvidenceJudge | None = None,
) -> tuple[TaskValidation, Replay, Replay | None]:
    """:func:`validate_task`, also returning the reference replay and, with ``second_replay``,
    a second replay of the whole reference solution on another fresh instance (for the leak
    check) when it comes almost free: when the last write is the last step, the dropped-write
    trajectory is that replay's prefix, snapshotted before its last step.

    Without ``require_proof``, a task with no reference solution gets only the checks
    that need none (:func:`_validate_unproven`) and is reported ``unproven``; with it, a
    task whose evidence-only verifier no judge decided fails (it is not proven).

    ``judge`` decides the trajectories whose verifier only gathers evidence (AWM-1K
    sql mode); without one they are left undecided and the task is reported so."""
    if task.user is not None:  # its proofs are conversations (awm_envs.validation.conversation)
        from awm_envs.validation.conversation import validate_conversation

        return validate_conversation(env_id, env, task, run_verifier)
    if task.reference_solution is None and not require_proof:
        return _validate_unproven(env_id, env, task, run_verifier, judge)
    steps = task.reference_solution or []
    problems, complexity_ok = task_problems(task)
    checks: list[TrajectoryCheck] = []

    # (a) the untouched initial state is not already complete
    untouched = replay_steps(env, [])
    initial = _check(
        run_verifier,
        task,
        "initial",
        "untouched initial database",
        untouched,
        None,
        False,
        judge,
        env_id,
    )
    checks.append(initial)

    # (b) the reference solution solves it
    ref = replay_steps(env, steps)
    reference = _check(
        run_verifier,
        task,
        "reference",
        "reference solution",
        ref,
        task.reference_answer,
        True,
        judge,
        env_id,
    )
    checks.append(reference)
    if ref.tool_errors:
        problems.append(f"reference solution hit tool errors: {ref.tool_errors}")

    # (c) plausible wrong trajectories are rejected
    dropped, second = _dropped_last_write(env, task, run_verifier, second_replay, judge, env_id)
    wrong = [] if dropped is None else [dropped]
    wrong += _wrong_claims(env, task, run_verifier, untouched, ref, judge, env_id)
    checks.extend(wrong)
    for c in checks:  # the judge decided them all at once; collect its labels
        c.settle()
    for c in checks:  # every failed task says why, not only through its booleans
        problem = _problem(c)
        if problem is not None:
            problems.append(problem)
    if not wrong:
        problems.append("no plausible wrong trajectory could be built to show it is rejected")
    undecided = any(c.undecided for c in checks)
    if undecided and require_proof:
        problems.append(f"not proven: {UNDECIDED_HINT}")

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
        notes=[UNDECIDED_HINT] if undecided else [],
    )
    return validation, ref, second
