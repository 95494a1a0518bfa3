"""``awm demo`` (the README's main command) and ``awm bench tasks`` (Pass@1 on awm's own tasks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from awm_bench.run_options import run_folder_options
from awm_core.console import make_console, progress_callback

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
    from awm_bench.demo import DemoConfig, InterruptedDemo, print_summary, run_demo

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
    try:
        result = run_demo(config, console)
    except InterruptedDemo:
        import os

        click.echo(
            f"\ninterrupted: the finished steps are kept in {out} (report.html, "
            "summary.json, trajectories.jsonl)",
            err=True,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        # a step running in a worker thread (validation) would hold the exit until it
        # finishes; everything finished is on disk, and sandbox workers die with this process
        os._exit(130)
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
@click.argument("envs", nargs=-1)
@click.option(
    "--model",
    "model",
    default="oracle",
    show_default=True,
    help="'oracle' replays each task's reference solution; else a backend spec "
    "(openai:NAME, local:smollm2, local:DIR).",
)
@click.option(
    "--task",
    "task_ids",
    multiple=True,
    help="Only this task (TASK with one ENV, else ENV/TASK); repeatable.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Tasks per environment.")
@click.option(
    "--trials", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes per task."
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Episodes at once per environment.",
)
@click.option(
    "--judge", default=None, help="code, llm or code+llm (default: code; code+llm for openai:)."
)
@click.option("--judge-model", default=None, help="Backend spec for llm judges.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Sandbox worker processes (0 = in-process).",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Agent turns per episode."
)
@click.option("--temperature", type=click.FloatRange(min=0), default=None, help="Default 0.")
@click.option("--top-p", type=click.FloatRange(min=0, max=1, min_open=True), default=None)
@click.option("--max-tokens", type=click.IntRange(min=1), default=None)
@click.option("--seed", type=int, default=None, help="Trial N samples with SEED+N.")
@run_folder_options("tasks")
@click.option(
    "--conversational",
    is_flag=True,
    help="Only conversational tasks (a user section); reports pass rate and mean turns.",
)
@click.option(
    "--user-model",
    default=None,
    help="With --conversational: the llm user simulator's model (default: the scripted user).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def bench_tasks(
    envs: tuple[str, ...],
    model: str,
    task_ids: tuple[str, ...],
    limit: int | None,
    trials: int,
    concurrency: int,
    judge: str | None,
    judge_model: str | None,
    workers: int,
    max_steps: int | None,
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    seed: int | None,
    run_name: str | None,
    results: Path,
    out: Path | None,
    conversational: bool,
    user_model: str | None,
    as_json: bool,
) -> None:
    """Pass@1 by complexity bucket (and pass^k with --trials) for one policy on awm tasks.

    ENVS default to shop and bank (with --conversational, the environments that have
    conversational tasks: their user is the task's scripted one, or the llm simulator
    on --user-model). The same run as `awm bench run tasks`, with its
    layout: OUT/trajectories.jsonl (every episode with its verdict, kept as it
    ends; `awm view OUT`), OUT/awm.jsonl, OUT/summary.json and OUT/report.html.
    Ctrl-C keeps every finished episode; the same command (or --run) continues.
    """
    import dataclasses
    import time

    from awm_bench.demo import DemoResult, print_summary
    from awm_bench.suite_cli import model_slug
    from awm_bench.tasks_suite import (
        CONVERSATIONAL_ENVS,
        DEFAULT_ENVS,
        ORACLE,
        AwmTasksBenchmark,
        TasksRun,
        run_tasks,
    )
    from awm_core.contracts import benchmark_sampling
    from awm_core.errors import UnknownSubsetError
    from awm_core.llm.sampling import Sampling

    if model == "reference":  # the name this command used before the ground truth was 'oracle'
        click.echo("note: the ground-truth policy is called 'oracle' now", err=True)
        model = ORACLE
    envs = envs or (CONVERSATIONAL_ENVS if conversational else DEFAULT_ENVS)
    if len(envs) == 1:
        task_ids = tuple(t if "/" in t else f"{envs[0]}/{t}" for t in task_ids)
    elif any("/" not in t for t in task_ids):
        raise click.BadParameter("with several ENVS, name tasks as ENV/TASK", param_hint="--task")
    if out is None:
        out = results / (run_name or time.strftime("%Y%m%d-%H%M%S")) / "tasks" / model_slug(model)
    sampling = benchmark_sampling(
        AwmTasksBenchmark(), Sampling(temperature, top_p, max_tokens, seed)
    )
    config = TasksRun(
        out=out,
        model=model,
        envs=envs,
        task_ids=task_ids,
        limit=limit,
        trials=trials,
        concurrency=concurrency,
        workers=workers,
        judge=judge,
        judge_model=judge_model,
        max_steps=max_steps,
        sampling=sampling,
        conversational=conversational,
        user_model=user_model,
    )
    try:
        with progress_callback() as progress:
            result = run_tasks(dataclasses.replace(config, progress=progress))
    except UnknownSubsetError as exc:
        raise click.BadParameter(str(exc), param_hint="--task") from None
    except KeyboardInterrupt:
        kept = sum(1 for _ in (out / "awm.jsonl").open()) if (out / "awm.jsonl").exists() else 0
        click.echo(
            f"\ninterrupted: {kept} finished episode(s) kept in {out}; "
            "run the same command again to continue",
            err=True,
        )
        sys.exit(130)
    if as_json:
        click.echo(json.dumps([r.to_json() for r in result.reports], indent=2))
        return
    shown = DemoResult(reports=result.reports, wall_s=result.wall_s)
    shown.report_path = out / "report.html"
    print_summary(shown, make_console(), title="awm bench tasks")
    if conversational:
        talk = result.summary["conversational"]
        click.echo(
            f"conversational: {talk['pass_rate']:.0%} passed over {talk['episodes']} episode(s); "
            f"mean turns {talk['mean_turns']:.1f} ({talk['mean_user_turns']:.1f} to the user)"
        )
    pass_hat = result.summary["modes"]["awm"]["pass_hat_k"]
    if trials > 1:
        click.echo("   ".join(f"{k}: {v:.0%}" for k, v in pass_hat.items()))
    click.echo(f"episodes: awm view {out}")
