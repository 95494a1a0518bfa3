"""``awm view PATH``: browse trajectories and their verdicts in the terminal.

PATH is what ``awm bench tasks --out DIR`` wrote (``DIR`` or its
``trajectories.jsonl``), a trajectory ``.json`` from ``awm run --out``, or any
``.jsonl`` of trajectories. Without ``--task`` it lists every episode with its
verdict; ``--task ID`` (or ``--index N``) shows one episode step by step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from awm_core.errors import AWMError


class TrajectoryFileError(AWMError):
    """A path given to ``awm view`` holds no readable trajectories."""


def load_trajectory_file(path: Path) -> list[Any]:
    """Trajectories from a bench output folder, a ``.jsonl`` file or a ``.json`` file."""
    from awm_core.models import Trajectory

    if path.is_dir():
        candidate = path / "trajectories.jsonl"
        if not candidate.is_file():
            raise TrajectoryFileError(
                f"{path} has no trajectories.jsonl; write one with "
                f"`awm bench tasks ENV --out {path}`"
            )
        path = candidate
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            items = data if isinstance(data, list) else [data]
        trajectories = [Trajectory.model_validate(item) for item in items]
    except (OSError, ValueError) as exc:
        raise TrajectoryFileError(
            f"{path} is not a trajectory file ({str(exc).splitlines()[0]}); "
            "see `awm schema trajectory`"
        ) from None
    if not trajectories:
        raise TrajectoryFileError(f"{path} holds no trajectories")
    return trajectories


def _verdict(traj: Any) -> tuple[str, str]:
    verdict = traj.metadata.get("verdict") or {}
    label = str(verdict.get("label", "-"))
    reward = verdict.get("reward")
    return label, ("-" if reward is None else f"{float(reward):+.1f}")


@click.command(name="view")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--task", "task_id", default=None, help="Show the episode of this task id.")
@click.option(
    "--index", type=click.IntRange(min=0), default=None, help="Show the N-th episode (from 0)."
)
def view_command(path: Path, task_id: str | None, index: int | None) -> None:
    """Browse trajectories with their verdicts (awm bench tasks --out DIR, awm run --out FILE)."""
    from rich.markup import escape
    from rich.table import Table

    from awm_core.console import make_console
    from awm_core.run_command import print_trajectory

    trajectories = load_trajectory_file(path)
    console = make_console()
    if task_id is not None or index is not None:
        if index is not None:
            if index >= len(trajectories):
                raise click.BadParameter(
                    f"there are {len(trajectories)} episodes (0..{len(trajectories) - 1})",
                    param_hint="--index",
                )
            chosen = trajectories[index]
        else:
            matches = [t for t in trajectories if t.task_id == task_id]
            if not matches:
                known = ", ".join(sorted({t.task_id for t in trajectories}))
                raise click.BadParameter(
                    f"no episode of task {task_id!r}; tasks here: {known}", param_hint="--task"
                )
            chosen = matches[0]
        print_trajectory(chosen, console)
        label, reward = _verdict(chosen)
        verdict = chosen.metadata.get("verdict") or {}
        console.print(f"verdict: {escape(label)}   reward: {reward}")
        if verdict.get("reasoning"):
            console.print(f"reason: {escape(str(verdict['reasoning']))}")
        return
    table = Table(title=f"awm view {path}")
    for col in ("#", "env", "task", "verdict", "reward", "steps", "ended by", "final answer"):
        table.add_column(col, overflow="fold")
    passed = 0
    for i, traj in enumerate(trajectories):
        label, reward = _verdict(traj)
        passed += label == "Completed"
        colour = "green" if label == "Completed" else "red" if label != "-" else "white"
        table.add_row(
            str(i),
            escape(traj.env_id),
            escape(traj.task_id),
            f"[{colour}]{escape(label)}[/{colour}]",
            reward,
            str(len(traj.steps)),
            traj.termination.value,
            escape((traj.final_answer or "")[:80]),
        )
    console.print(table)
    judged = sum(1 for t in trajectories if t.metadata.get("verdict"))
    if judged:
        console.print(f"{passed}/{judged} completed; show one with --task ID or --index N")
    else:
        console.print(
            f"{len(trajectories)} episode(s), not judged (awm verify run judges one); "
            "show one with --task ID or --index N"
        )
