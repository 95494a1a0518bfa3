"""``awm demo`` (the README's main command) and ``awm bench tasks`` (Pass@1 on awm's own tasks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from awm_core.console import make_console, progress_bars

# catalog environments the demo validates and rolls out (kept here: this module must stay
# light, because every `awm` start loads it; the demo itself is imported when it runs)
DEFAULT_CATALOG_ENVS = ("shop", "bank")


@click.command(name="demo")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("awm-demo"),
    show_default=True,
    help="Where the report and artifacts go.",
)
@click.option(
    "--model",
    default=None,
    help="Use a real endpoint (e.g. openai:gpt-4o-mini with OPENAI_BASE_URL/OPENAI_API_KEY) for synthesis, agent and judge.",
)
@click.option(
    "--env",
    "envs",
    multiple=True,
    default=DEFAULT_CATALOG_ENVS,
    show_default=True,
    help="Catalog environments to validate and roll out.",
)
@click.option("--no-synth", is_flag=True, help="Skip the synthesis step.")
@click.option("--no-local", is_flag=True, help="Skip the local SmolLM2 agent.")
@click.option(
    "--local-tasks", type=int, default=2, show_default=True, help="Tasks the local model attempts."
)
@click.option(
    "--workers",
    type=int,
    default=2,
    show_default=True,
    help="Sandbox worker processes for the synthesized environment.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the summary as JSON (progress goes to stderr)."
)
def demo(
    out: Path,
    model: str | None,
    envs: tuple[str, ...],
    no_synth: bool,
    no_local: bool,
    local_tasks: int,
    workers: int,
    as_json: bool,
) -> None:
    """Run the whole loop offline: synthesize, validate, roll out, verify, reward, report.

    No network and no API key are needed: synthesis replays recorded LLM
    responses (including broken first attempts it must correct), the agent is the
    reference solution plus a real small model on the CPU, and the judge is the
    sandboxed verifier. Writes OUT/report.html and OUT/summary.json.
    """
    from awm_bench.demo import DemoConfig, print_summary, run_demo

    console = make_console(stderr=as_json)  # logs and CI: wide enough for the summary table
    config = DemoConfig(
        out=out,
        model=model,
        catalog_envs=envs,
        synthesize=not no_synth,
        local_agent=not no_local,
        local_tasks=local_tasks,
        workers=workers,
    )
    result = run_demo(config, console)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        print_summary(result, console)
    reference = [o for r in result.reports if r.policy == "reference" for o in r.outcomes]
    failed_validation = [v for v in result.validation if not v["passed"]]
    if failed_validation or not reference or not all(o.passed for o in reference):
        sys.exit(1)


@click.group(name="bench")
def bench() -> None:
    """Evaluate agents: Pass@1 on awm's own tasks (external benchmarks: see the docs)."""


@bench.command(name="tasks")
@click.argument("envs", nargs=-1, required=True)
@click.option(
    "--model",
    "model",
    default="reference",
    show_default=True,
    help="'reference' replays reference solutions; else a backend spec (openai:NAME, local:smollm2).",
)
@click.option("--judge", default="code", show_default=True, help="code, llm or code+llm.")
@click.option("--judge-model", default=None, help="Backend spec for llm judges.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Sandbox worker processes (0 = in-process).",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=20, show_default=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/trajectories.jsonl (with verdicts), DIR/summary.json and DIR/report.html; "
    "browse them with awm view DIR.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def bench_tasks(
    envs: tuple[str, ...],
    model: str,
    judge: str,
    judge_model: str | None,
    workers: int,
    max_steps: int,
    out: Path | None,
    as_json: bool,
) -> None:
    """Pass@1 by complexity bucket for one policy on the tasks of ENVS.

    --out DIR keeps every trajectory with its verdict (awm view DIR).
    """
    import asyncio
    import time

    from awm_bench.demo import DemoResult, print_summary
    from awm_bench.evaluate import EpisodeOutcome, PolicyFactory, evaluate_environment
    from awm_bench.report_html import render_report
    from awm_core import get_backend, get_judge
    from awm_core.episode import ActingPolicy, EpisodeSettings, Policy, ReferencePolicy
    from awm_core.models import Task, Trajectory
    from awm_envs import load_environment

    environments = [load_environment(e) for e in envs]  # an unknown id fails before any work
    judge_obj = get_judge(judge, model=judge_model) if judge_model else get_judge(judge)
    factory: PolicyFactory
    if model == "reference":
        factory = ReferencePolicy
    else:
        backend = get_backend(model)

        def model_policy(task: Task) -> ActingPolicy:
            return Policy(backend, temperature=0.0)

        factory = model_policy

    started = time.perf_counter()
    trajectories: list[Trajectory] = []
    total = sum(len(e.tasks) for e in environments)
    # the bar goes to stderr and disappears when done; stdout keeps the table or the JSON
    with progress_bars() as progress:
        bar = progress.add_task("bench tasks", total=total, last="")

        def tick(outcome: EpisodeOutcome) -> None:
            progress.update(
                bar, advance=1, last=f"{outcome.env_id}/{outcome.task_id}: {outcome.label}"
            )

        reports = [
            asyncio.run(
                evaluate_environment(
                    e,
                    factory,
                    judge=judge_obj,
                    workers=workers,
                    settings=EpisodeSettings(max_steps=max_steps),
                    trajectories=trajectories,
                    on_outcome=tick,
                )
            )
            for e in environments
        ]
    result = DemoResult(reports=reports, wall_s=time.perf_counter() - started)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "trajectories.jsonl").open("w", encoding="utf-8") as fh:
            for traj in trajectories:
                fh.write(traj.model_dump_json() + "\n")
        summary = {
            "model": model,
            "judge": judge_obj.name,
            "wall_s": round(result.wall_s, 3),
            "reports": [r.to_json() for r in reports],
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        html = render_report(
            title="awm bench tasks",
            reports=reports,
            facts={"model": model, "judge": judge_obj.name, "wall time": f"{result.wall_s:.1f} s"},
        )
        result.report_path = out / "report.html"
        result.report_path.write_text(html, encoding="utf-8")
    if as_json:
        click.echo(json.dumps([r.to_json() for r in reports], indent=2))
        return
    print_summary(result, make_console(), title="awm bench tasks")
