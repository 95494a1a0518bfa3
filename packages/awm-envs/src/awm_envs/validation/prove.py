"""Find reference solutions for unproven tasks (imported from AWM-1K) by running an agent.

For each task without a reference solution, up to ``attempts`` episodes of any
backend run on fresh instances. A trajectory is kept only when the task's
verifier says *complete* and the usual checks then hold with it as the reference
(:func:`awm_envs.validation.taskcheck.validate_task_with_replay` with proof required: it
replays cleanly, the initial state is not complete, and its corruptions — the
last write dropped, a wrong or empty answer, doing nothing — are rejected). The
kept trajectory's successful calls and final answer become ``reference_solution``
and ``reference_answer`` in ``tasks.json``, and the complexity is set from its
length.

A verifier that only gathers evidence (an AWM-1K sql-mode verifier) cannot say
*complete*. Given a judge (``--judge-model``), the code-augmented judge decides each
episode from that evidence, the task's criteria and the trajectory, and decides the
checks above the same way; only **Completed** counts. The report keeps, per attempt,
who decided (``code``, ``judge``, ``undecided``) with the judge's label and reasoning,
and per task the judge model that proved it. Without a judge such a task is tried
once and set aside (a later run with a judge tries it again).

Resumable: proven tasks are written to ``tasks.json`` at once, and a JSON report
(default ``<bundle>.prove.json`` beside the bundle) records every attempt, so a
second run skips proven tasks and spends only the attempts left.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awm_core.episode import CALL_TOOL, EpisodeSettings, Policy, run_episode
from awm_core.llm.base import LLMBackend
from awm_core.models import Task, ToolCallStep, Trajectory, complexity_for_calls
from awm_envs.errors import JudgeFailedError
from awm_envs.validation.judge import EvidenceJudge, is_undecided
from awm_envs.validation.replay import RuntimeEnvironment, open_environment
from awm_envs.validation.runner import VerifierRunner
from awm_envs.validation.taskcheck import validate_task_with_replay
from awm_envs.verifiers.pool import VerifierPool

PROVEN_TAG = "proven-by-agent"
_DROPPED_TAGS = ("unproven", "complexity-unlabelled")
PROVE_SETTINGS = EpisodeSettings(lenient=True)
"""A proving episode repairs near-miss tool calls: what counts is whether the verifier passes."""


@dataclass
class Attempt:
    """One episode: what the agent did and why it was kept or not.

    ``decided_by`` says who judged the episode: ``code`` (the verifier), ``judge``
    (an evidence-only verifier, decided by ``judge_model``, whose ``judge_label`` and
    ``judge_reasoning`` are kept) or ``undecided`` (evidence only, no judge given).
    """

    attempt: int
    termination: str
    calls: int
    complete: bool
    accepted: bool
    reason: str
    finished_at: str = ""
    decided_by: str = "code"
    judge_model: str | None = None
    judge_label: str | None = None
    judge_reasoning: str | None = None


@dataclass
class TaskProof:
    """One task's state across runs: ``proven``, ``unproven`` (attempts left or spent) or
    ``skipped`` (it had a reference solution, no verifier, or a verifier that cannot
    decide and no judge). A proven task says who decided it: ``decided_by`` ``code``
    or ``judge``, and then ``judge_model``."""

    task_id: str
    status: str = "unproven"
    attempts: list[Attempt] = field(default_factory=list)
    note: str = ""
    decided_by: str | None = None
    judge_model: str | None = None


@dataclass
class ProveReport:
    """Every task's proof state for one bundle; saved as JSON after each attempt."""

    env_id: str
    path: str
    model: str
    tasks: dict[str, TaskProof] = field(default_factory=dict)
    judge_model: str | None = None

    def counts(self) -> dict[str, int]:
        """How many tasks are proven, unproven, skipped."""
        out = {"proven": 0, "unproven": 0, "skipped": 0}
        for t in self.tasks.values():
            out[t.status] = out.get(t.status, 0) + 1
        return out

    def save(self, path: Path) -> None:
        """Write atomically (a killed run leaves the previous report)."""
        tmp = path.with_suffix(".tmp")
        payload = {**asdict(self), "counts": self.counts()}
        tmp.write_text(json.dumps(payload, indent=2), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(
        cls, path: Path, env_id: str, bundle: Path, model: str, judge_model: str | None = None
    ) -> ProveReport:
        """The saved report, or a new one (``judge_model``: this run's)."""
        report = cls(env_id=env_id, path=str(bundle), model=model, judge_model=judge_model)
        if path.is_file():
            raw = json.loads(path.read_text(encoding="utf-8"))
            for task_id, t in raw.get("tasks", {}).items():
                report.tasks[task_id] = TaskProof(
                    task_id=task_id,
                    status=t.get("status", "unproven"),
                    attempts=[Attempt(**a) for a in t.get("attempts", [])],
                    note=t.get("note", ""),
                    decided_by=t.get("decided_by"),
                    judge_model=t.get("judge_model"),
                )
        return report


def default_report_path(bundle: Path) -> Path:
    """``<bundle>.prove.json`` beside the bundle folder (the bundle's content is not touched)."""
    return bundle.parent / f"{bundle.name}.prove.json"


def _successful_calls(traj: Trajectory) -> list[ToolCallStep]:
    steps = []
    for step in traj.steps:
        call, result = step.tool_call, step.result
        if call is None or call.name != CALL_TOOL or result is None or result.is_error:
            continue
        name = call.arguments.get("tool_name")
        arguments: Any = call.arguments.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                continue
        if isinstance(name, str) and isinstance(arguments, dict):
            steps.append(ToolCallStep(tool=name, arguments=arguments))
    return steps


def _write_reference(bundle: Path, task: Task) -> None:
    """Put the task's new reference solution into tasks.json (atomically)."""
    path = bundle / "tasks.json"
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    for i, row in enumerate(rows):
        if row.get("id") == task.id:
            rows[i] = task.model_dump(mode="json", exclude_defaults=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


async def _attempt(
    env: RuntimeEnvironment,
    raw_env: Any,
    task: Task,
    backend: LLMBackend,
    runner: VerifierRunner,
    number: int,
    settings: EpisodeSettings,
    judge: EvidenceJudge | None = None,
) -> tuple[Attempt, Task | None, bool]:
    """One episode on a fresh instance; the candidate task when it is kept, and whether more
    attempts are pointless (the verifier cannot decide and no judge is given)."""
    inst = raw_env.instance()
    try:
        initial = await inst.snapshot()
        traj = await run_episode(
            Policy(backend), inst, task, settings=settings, env_id=env_id_of(raw_env)
        )
        final = await inst.snapshot()
    finally:
        await inst.close()
    calls = _successful_calls(traj)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")

    decision: dict[str, Any] = {}

    def attempt(complete: bool, accepted: bool, reason: str) -> Attempt:
        return Attempt(
            number,
            traj.termination.value,
            len(calls),
            complete,
            accepted,
            reason,
            stamp,
            **decision,
        )

    result = await asyncio.to_thread(runner, task.verifier or "", initial, final, traj.final_answer)
    error = runner.failure(result)
    if error:
        return attempt(False, False, f"verifier error: {error}"), None, False
    if is_undecided(result):
        if judge is None:
            decision["decided_by"] = "undecided"
            reason = (
                "an sql-mode verifier only gathers evidence: it cannot decide (needs a judge: "
                "rerun with --judge-model SPEC)"
            )
            return attempt(False, False, reason), None, True
        decision.update(decided_by="judge", judge_model=judge.model)
        try:
            verdict = await judge.adecide(task, traj, initial, final, result)
        except JudgeFailedError as exc:
            return attempt(False, False, f"judge error: {exc}"), None, False
        decision.update(judge_label=verdict.label, judge_reasoning=verdict.reasoning)
        if not verdict.complete:
            reason = f"the judge ({judge.model}) said {verdict.label} ({traj.termination.value})"
            return attempt(False, False, reason), None, False
    elif not result.complete:
        reason = f"verifier: not complete ({traj.termination.value})"
        return attempt(False, False, reason), None, False
    tags = [t for t in task.tags if t not in _DROPPED_TAGS]
    candidate = task.model_copy(
        update={
            "reference_solution": calls,
            "reference_answer": traj.final_answer,
            "complexity": complexity_for_calls(len(calls)),
            "tags": [*tags, PROVEN_TAG] if PROVEN_TAG not in tags else tags,
        }
    )
    check, _, _ = await asyncio.to_thread(
        validate_task_with_replay, env_id_of(raw_env), env, candidate, runner, False, True, judge
    )
    if not check.proven:
        why = "; ".join(check.problems) or ", ".join(c.kind for c in check.checks if not c.ok)
        return attempt(True, False, f"complete, but the checks failed: {why}"), None, False
    return attempt(True, True, "complete; replay and wrong-attempt checks hold"), candidate, False


def env_id_of(raw_env: Any) -> str:
    """The environment's id (the runtime environment's, or its folder name)."""
    return str(getattr(raw_env, "id", "") or "")


async def prove_environment(
    bundle: Path,
    backend: LLMBackend,
    *,
    attempts: int = 3,
    report_path: Path | None = None,
    verifier_pool: VerifierPool | None = None,
    task_ids: list[str] | None = None,
    settings: EpisodeSettings = PROVE_SETTINGS,
    progress: Any = None,
    judge: EvidenceJudge | None = None,
) -> ProveReport:
    """Run ``backend`` on the bundle's unproven tasks (see the module docstring).

    ``verifier_pool``: the sandbox the bundle's verifiers run in (untrusted bundles);
    None runs them in this process. ``progress(task_id, attempt)`` is called after each
    attempt. The report is saved after every attempt. ``judge`` decides episodes (and
    checks) whose verifier only gathers evidence.
    """
    env = open_environment(bundle)
    runner = VerifierRunner.for_bundle(bundle, env.verifier_source, verifier_pool)
    raw_env = env._env
    report_path = report_path or default_report_path(bundle)
    judge_model = judge.model if judge is not None else None
    report = ProveReport.load(report_path, env_id_of(raw_env), bundle, backend.name, judge_model)
    for task in env.tasks:
        if task_ids is not None and task.id not in task_ids:
            continue
        proof = report.tasks.setdefault(task.id, TaskProof(task.id))
        if task.reference_solution is not None:
            if proof.status != "proven":
                proof.status, proof.note = "skipped", "already has a reference solution"
            continue
        if not task.verifier:
            proof.status, proof.note = "skipped", "no verifier"
            continue
        if proof.status == "skipped" and proof.attempts and judge is None:
            continue  # an earlier run found its verifier cannot decide; a judge could
        proof.status = "unproven"
        while len(proof.attempts) < attempts:
            result, candidate, give_up = await _attempt(
                env,
                raw_env,
                task,
                backend,
                runner,
                len(proof.attempts) + 1,
                settings,
                judge,
            )
            proof.attempts.append(result)
            if candidate is not None:
                _write_reference(bundle, candidate)
                proof.status, proof.note = "proven", f"attempt {result.attempt}"
                proof.decided_by, proof.judge_model = result.decided_by, result.judge_model
                if result.decided_by == "judge":
                    proof.note += f", decided by the judge {result.judge_model}"
            report.save(report_path)
            if progress is not None:
                progress(task.id, result)
            if candidate is not None:
                break
            if give_up:
                proof.status, proof.note = "skipped", result.reason
                break
        if proof.status == "unproven":
            proof.note = f"{len(proof.attempts)} of {attempts} attempts spent, none kept"
    report.save(report_path)
    return report
