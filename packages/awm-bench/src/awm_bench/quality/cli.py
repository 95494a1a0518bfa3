"""``awm bench quality ENV...``: the command (its output is in :mod:`awm_bench.quality.display`).

Loaded at every ``awm`` start to register the command, so it imports only click
here; the report's machinery is imported when the command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from awm_core.console import progress_bars


@click.command(name="quality")
@click.argument("envs", nargs=-1, required=True)
@click.option(
    "--judge-model",
    "judge_model",
    default=None,
    help="Backend spec of the LLM judge (openai:NAME, local:smollm2, scripted:PATH). "
    "Default: the model-free 'checks' judge, which scores from the evidence alone.",
)
@click.option(
    "--rollouts",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="trajectories.jsonl (or a folder with one, from `awm bench tasks --out DIR`) whose "
    "environment errors to count; a rollout judged Completed proves its task feasible. "
    "Default: replay every reference solution.",
)
@click.option(
    "--no-replay",
    is_flag=True,
    help="Do not replay reference solutions (with --rollouts: of the tasks no rollout completed).",
)
@click.option(
    "--threshold",
    type=click.IntRange(1, 5),
    default=3,
    show_default=True,
    help="A score under this flags the task (scale 1-5).",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Tasks per environment.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Judge requests in flight.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Sandbox worker processes for the reference replay (0 = in-process).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/quality.json and DIR/quality.html.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def quality_command(
    envs: tuple[str, ...],
    judge_model: str | None,
    rollouts: Path | None,
    no_replay: bool,
    threshold: int,
    limit: int | None,
    concurrency: int,
    workers: int,
    out: Path | None,
    as_json: bool,
) -> None:
    """Rate every task of ENVS for feasibility, data alignment and toolset completeness.

    ENV is a catalog id (shop) or a bundle folder. The judge sees the tools, the
    related tables with sample rows, a database lookup of every entity the task
    names, the reference solution and its replay, and the validation record; it
    scores each criterion 1-5 with a short reason. Environment errors (tool calls
    that failed on the environment's side, not the agent's) are counted per
    environment and per tool from --rollouts, or from a replay of the reference
    solutions.
    """
    import asyncio

    from awm_bench.quality.display import print_quality, render_quality_html
    from awm_bench.quality.judge import make_judge
    from awm_bench.quality.report import assess_quality
    from awm_bench.quality.rollouts import read_trajectories
    from awm_envs import load_environment

    environments = [load_environment(e) for e in envs]  # an unknown id fails before any work
    judge = make_judge(judge_model)  # a backend without its key fails here, typed
    trajectories = None
    skipped = 0
    if rollouts is not None:
        trajectories, skipped = read_trajectories(rollouts)
    ntasks = sum(len(e.tasks[:limit] if limit else e.tasks) for e in environments)
    replaying = not no_replay
    with progress_bars() as progress:
        bars = {"judge": progress.add_task("judge", total=ntasks, last="")}
        if replaying:
            bars["replay"] = progress.add_task("replay", total=ntasks, last="")

        def tick(phase: str, detail: str) -> None:
            progress.update(bars[phase], advance=1, last=detail)

        report = asyncio.run(
            assess_quality(
                environments,
                judge,
                rollouts=trajectories,
                replay=not no_replay,
                workers=workers,
                limit=limit,
                concurrency=concurrency,
                threshold=threshold,
                rollouts_label=str(rollouts) if rollouts is not None else None,
                progress=tick,
            )
        )
    report.skipped_rollout_lines = skipped
    data = report.to_json()
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "quality.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
        (out / "quality.html").write_text(render_quality_html(data), encoding="utf-8")
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        print_quality(data)
        if out is not None:
            click.echo(f"report: {out / 'quality.html'}")
    rated = [t for e in report.envs for t in e.tasks]
    if rated and all(t.error for t in rated):
        sys.exit(1)  # the judge rated nothing: the report says why per task
