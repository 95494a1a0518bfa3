"""Where the rollouts come from: a ``trajectories.jsonl``, or a replay of every reference solution."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from awm_bench.quality.env_errors import classify_step, tool_of
from awm_core.errors import AWMError
from awm_core.models import Task, Trajectory


class QualityError(AWMError):
    """The quality report cannot be made (unreadable rollouts, no tasks...)."""


def read_trajectories(path: Path) -> tuple[list[Trajectory], int]:
    """Trajectories from a ``trajectories.jsonl`` (or a folder holding one), and lines skipped."""
    target = path / "trajectories.jsonl" if path.is_dir() else path
    if not target.is_file():
        raise QualityError(
            f"no rollouts at {path}: pass a trajectories.jsonl or a folder holding one "
            "(written by `awm bench tasks --out DIR`)"
        )
    out: list[Trajectory] = []
    skipped = 0
    for line in target.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            out.append(Trajectory.model_validate_json(line))
        except ValidationError:
            skipped += 1
    if not out:
        raise QualityError(f"{target} holds no trajectory ({skipped} unreadable line(s))")
    return out, skipped


async def replay_references(
    env: Any,
    *,
    workers: int = 0,
    tasks: Sequence[Task] | None = None,
    on_done: Callable[[str], None] | None = None,
) -> list[Trajectory]:
    """Replay every reference solution (code judge): cheap, offline rollouts with verdicts."""
    from awm_bench.evaluate import EpisodeOutcome, evaluate_environment
    from awm_core.episode import ReferencePolicy

    trajectories: list[Trajectory] = []

    def tick(outcome: EpisodeOutcome) -> None:
        if on_done is not None:
            on_done(f"{outcome.env_id}/{outcome.task_id}: {outcome.label}")

    await evaluate_environment(
        env,
        ReferencePolicy,
        tasks=tasks,
        judge="code",
        workers=workers,
        trajectories=trajectories,
        on_outcome=tick,
    )
    return trajectories


def replay_outcome(traj: Trajectory) -> tuple[str, list[str]]:
    """A replay's verdict label and its environment errors (``tool: message``)."""
    verdict = traj.metadata.get("verdict") or {}
    env_errors = [
        f"{tool_of(s)}: {s.result.content if s.result else ''}"
        for s in traj.steps
        if classify_step(s) == "env"
    ]
    return str(verdict.get("label", "unknown")), env_errors
