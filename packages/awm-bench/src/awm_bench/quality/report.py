"""The report: every task rated, environment errors counted, summed up per environment."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from awm_bench.quality.database import EnvData
from awm_bench.quality.env_errors import EnvErrors, count_env_errors
from awm_bench.quality.evidence import gather_evidence, proof_text
from awm_bench.quality.judge import QualityJudge
from awm_bench.quality.ratings import CRITERIA, DEFAULT_THRESHOLD, TaskQuality
from awm_bench.quality.rollouts import replay_outcome, replay_references
from awm_core.models import Task, Trajectory


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


@dataclass
class EnvQuality:
    """One environment's ratings and environment errors."""

    env_id: str
    path: str
    tools: int
    tables: int
    rows: int
    proof: str
    tasks: list[TaskQuality]
    errors: EnvErrors | None = None

    def summary(self, threshold: int) -> dict[str, Any]:
        """Mean per criterion, share of rated tasks below ``threshold``, flagged and unjudged tasks."""
        out: dict[str, Any] = {"mean": {}, "below_threshold": {}}
        for c in CRITERIA:
            vals = [t.scores[c] for t in self.tasks if t.scores.get(c) is not None]
            nums = [float(v) for v in vals if v is not None]
            out["mean"][c] = _mean(nums)
            out["below_threshold"][c] = (
                round(sum(v < threshold for v in nums) / len(nums), 3) if nums else None
            )
        out["flagged"] = [t.task_id for t in self.tasks if t.below(threshold)]
        out["unjudged"] = [t.task_id for t in self.tasks if t.error]
        return out

    def to_json(self, threshold: int) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "path": self.path,
            "tools": self.tools,
            "tables": self.tables,
            "rows": self.rows,
            "validation": self.proof,
            **self.summary(threshold),
            "env_errors": self.errors.to_json() if self.errors else None,
            "tasks": [t.to_json() for t in self.tasks],
        }


@dataclass
class QualityReport:
    """The whole report (``quality.json``)."""

    judge: str
    threshold: int
    rollouts: str
    envs: list[EnvQuality]
    wall_s: float = 0.0
    skipped_rollout_lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "threshold": self.threshold,
            "scale": "1 (not at all) .. 5 (fully)",
            "rollouts": self.rollouts,
            "skipped_rollout_lines": self.skipped_rollout_lines,
            "wall_s": round(self.wall_s, 3),
            "environments": [e.to_json(self.threshold) for e in self.envs],
        }


Progress = Callable[[str, str], None]
"""``progress(phase, detail)``: called as each replay episode and each rating finishes."""


async def _rate(
    data: EnvData,
    task: Task,
    replay: tuple[str, list[str]] | None,
    judge: QualityJudge,
    limit: asyncio.Semaphore,
    progress: Progress | None,
) -> TaskQuality:
    label, env_errors = replay if replay is not None else (None, [])
    ev = gather_evidence(data, task, label, replay_env_errors=env_errors)
    async with limit:
        rated = await judge.rate(ev)
    if progress is not None:
        shown = "unjudged" if rated.error else "/".join(str(rated.scores[c]) for c in CRITERIA)
        progress("judge", f"{data.env_id}/{task.id}: {shown}")
    return rated


async def assess_quality(
    envs: Sequence[Any],
    judge: QualityJudge,
    *,
    rollouts: Sequence[Trajectory] | None = None,
    replay: bool = True,
    workers: int = 0,
    limit: int | None = None,
    concurrency: int = 8,
    threshold: int = DEFAULT_THRESHOLD,
    rollouts_label: str | None = None,
    progress: Progress | None = None,
) -> QualityReport:
    """Rate every task of ``envs`` (each an :class:`awm_envs.Environment`) and count env errors.

    ``rollouts`` given: their environment errors are counted; otherwise, with
    ``replay``, the reference solutions are replayed first and their outcome is
    both rollouts to count and evidence for the judge.
    """
    started = time.perf_counter()
    limit_sem = asyncio.Semaphore(max(1, concurrency))
    results: list[EnvQuality] = []
    errors = count_env_errors(rollouts) if rollouts is not None else {}
    for env in envs:
        data = EnvData.load(env)
        try:
            tasks = data.tasks[:limit] if limit is not None else data.tasks
            replays: dict[str, tuple[str, list[str]]] = {}
            if rollouts is not None:
                # a rollout the verifier judged Completed proves the task feasible as well
                # as a replay of its reference would; the rest are replayed (with --replay)
                for traj in rollouts:
                    if traj.env_id == data.env_id:
                        outcome = replay_outcome(traj)
                        if outcome[0] == "Completed":
                            replays.setdefault(traj.task_id, outcome)
            unproven = [t for t in tasks if t.id not in replays]
            if replay and unproven:
                trajs = await replay_references(
                    env,
                    workers=workers,
                    tasks=unproven,
                    on_done=(lambda d: progress("replay", d)) if progress else None,
                )
                if rollouts is None:
                    errors[data.env_id] = count_env_errors(trajs).get(data.env_id, EnvErrors())
                replays.update({t.task_id: replay_outcome(t) for t in trajs})
            rated = list(
                await asyncio.gather(
                    *(_rate(data, t, replays.get(t.id), judge, limit_sem, progress) for t in tasks)
                )
            )
            results.append(
                EnvQuality(
                    env_id=data.env_id,
                    path=str(data.path),
                    tools=len(data.tools),
                    tables=len(data.tables),
                    rows=sum(t.rows for t in data.tables.values()),
                    proof=proof_text(data.proof),
                    tasks=rated,
                    errors=errors.get(data.env_id) if (rollouts is not None or replay) else None,
                )
            )
        finally:
            data.close()
    if rollouts is not None:
        label = rollouts_label or f"{len(rollouts)} given trajectories"
    else:
        label = "reference replay" if replay else "none"
    return QualityReport(
        judge=judge.name,
        threshold=threshold,
        rollouts=label,
        envs=results,
        wall_s=time.perf_counter() - started,
    )
