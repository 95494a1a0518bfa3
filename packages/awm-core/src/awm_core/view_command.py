"""``awm view PATH``: every episode under PATH with its verdict, and any one in full.

PATH is a run folder (searched recursively for ``trajectories.jsonl`` and
trajectory ``.json`` files: ``awm bench tasks --out DIR``, ``bench-results/RUN``),
a ``.jsonl`` of trajectories or one trajectory ``.json`` (``awm run --out``).

On a terminal it opens a browser (:mod:`awm_core.view.tui`); ``--print`` (the
default when stdout is not a terminal) prints the list, or one episode in full:
the model's raw text for every turn, the parsed call and the check it failed, each
tool result whole, the verdict, the verifier's evidence and the database diff.
``--json`` gives the selected episodes with their verdicts and trajectories.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from awm_core.view.episodes import TrajectoryFileError

__all__ = ["TrajectoryFileError", "load_trajectory_file", "view_command"]


def load_trajectory_file(path: Path) -> list[Any]:
    """The trajectories under ``path`` (a file, or a folder searched recursively)."""
    from awm_core.view.episodes import load_episodes

    return [ep.trajectory for ep in load_episodes(path, task_complexity=False)]


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command(name="view")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--print",
    "as_text",
    is_flag=True,
    help="Print plain text instead of opening the browser (the default when piped).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the episodes, verdicts and trajectories as JSON."
)
@click.option(
    "--failed",
    is_flag=True,
    help="Only failed episodes (verdict not Completed, or a failed check).",
)
@click.option("--env", "env_id", default=None, help="Only episodes of this environment.")
@click.option("--task", "task_id", default=None, help="Only episodes of this task id.")
@click.option("--complexity", default=None, help="Only tasks of this complexity (easy, ...).")
@click.option(
    "--search", "text", default="", help="Only episodes whose ids, messages or verdict hold TEXT."
)
@click.option(
    "--index",
    type=click.IntRange(min=0),
    default=None,
    help="Show episode N (the # column) in full.",
)
@click.option("--full", is_flag=True, help="Print every selected episode in full, not the list.")
def view_command(
    path: Path,
    as_text: bool,
    as_json: bool,
    failed: bool,
    env_id: str | None,
    task_id: str | None,
    complexity: str | None,
    text: str,
    index: int | None,
    full: bool,
) -> None:
    """Browse episodes with their verdicts: every message in full, failed turns included.

    PATH is a run folder (awm bench tasks --out DIR, bench-results/RUN), a
    trajectories .jsonl or one trajectory .json (awm run --out FILE). On a
    terminal it opens a browser (Enter opens an episode, Escape goes back,
    f failed only, e environment, c complexity, / search, q quits); piped, or
    with --print, it prints the list, or one episode in full. A single episode
    (one file, --index N, or filters that leave one) is shown in full.
    """
    from awm_core.console import make_console
    from awm_core.view.episodes import EpisodeFilter, load_episodes
    from awm_core.view.render import print_episode, print_listing

    episodes = load_episodes(path)
    _check_choice("--task", task_id, {ep.task_id for ep in episodes}, "task")
    _check_choice("--env", env_id, {ep.env_id for ep in episodes}, "environment")
    _check_choice(
        "--complexity",
        complexity,
        {ep.complexity for ep in episodes if ep.complexity},
        "complexity",
    )
    if index is not None and index >= len(episodes):
        raise click.BadParameter(
            f"there are {len(episodes)} episodes (0..{len(episodes) - 1})", param_hint="--index"
        )
    filt = EpisodeFilter(
        failed=failed, env=env_id, task=task_id, complexity=complexity, text=text or ""
    )
    selected = [episodes[index]] if index is not None else filt.apply(episodes)
    if as_json:
        judged = [ep for ep in episodes if ep.verdict is not None]
        payload = {
            "path": str(path),
            "total": len(episodes),
            "judged": len(judged),
            "completed": sum(ep.verdict.completed for ep in judged if ep.verdict is not None),
            "filters": filt.describe(),
            "episodes": [ep.to_json() for ep in selected],
        }
        click.echo(json.dumps(payload, indent=2, default=str))
        return
    if not as_text and _interactive():
        from awm_core.view.tui import run_viewer

        single = selected[0] if len(selected) == 1 else None
        run_viewer(episodes, where=path, filt=filt, open_episode=single)
        return
    console = make_console()
    if not selected:
        click.echo(f"no episode matches ({filt.describe()}); {len(episodes)} episodes in {path}")
        return
    if len(selected) == 1 or full:
        for ep in selected:
            print_episode(ep, console)
        return
    root = path if path.is_dir() else None
    print_listing(episodes, selected, console, root=root, filters=filt.describe())


def _check_choice(option: str, value: str | None, known: set[str], what: str) -> None:
    if value is not None and value not in known:
        choices = ", ".join(sorted(known)) or "none recorded"
        raise click.BadParameter(
            f"no episode of {what} {value!r}; {what} values here: {choices}", param_hint=option
        )
