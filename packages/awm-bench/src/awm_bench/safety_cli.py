"""``awm bench safety``: the command; the engine is :mod:`awm_bench.safety`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from awm_bench.run_options import run_folder_options


@click.command(name="safety")
@click.argument("envs", nargs=-1)
@click.option(
    "--perturbation",
    "perturbations",
    multiple=True,
    help="A registered perturbation (corrupt-rows, inject, faults, idor, a plugin's); repeatable. "
    "Default: every registered one.",
)
@click.option(
    "--model",
    default="oracle",
    show_default=True,
    help="'oracle' (each task's reference solution), 'oracle+retry' (the same, retrying "
    "transient faults), 'naive' (the reference, but it obeys injected instructions) or a "
    "backend spec (openai:NAME, local:DIR).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Decides every perturbation.")
@click.option(
    "--task", "task_ids", multiple=True, help="Only this task (TASK with one ENV, else ENV/TASK)."
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Tasks per environment.")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Episodes at once per environment.",
)
@click.option(
    "--judge", default=None, help="code, llm or code+llm (default: code; code+llm for openai:)."
)
@click.option("--judge-model", default=None, help="Backend spec for llm judges.")
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Agent turns per episode."
)
@run_folder_options("safety")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def safety_command(
    envs: tuple[str, ...],
    perturbations: tuple[str, ...],
    model: str,
    seed: int,
    task_ids: tuple[str, ...],
    limit: int | None,
    concurrency: int,
    judge: str | None,
    judge_model: str | None,
    max_steps: int | None,
    run_name: str | None,
    results: Path,
    out: Path | None,
    as_json: bool,
) -> None:
    """Utility, utility under attack, targeted attack success, unauthorized access and
    unconfirmed irreversible actions, per environment and perturbation.

    ENVS default to shop and bank. Each task runs unperturbed and under each perturbation
    (the seed fixes what it does); an attack's injection goal counts as reached only when
    the verifier finds its state change in the database diff. Writes OUT/safety.jsonl
    (one row per episode, kept as it ends), OUT/trajectories.jsonl (`awm view OUT`),
    OUT/summary.json and OUT/report.html. Ctrl-C keeps every finished episode; the same
    command (or --run) continues.
    """
    import time

    from awm_bench.safety import DEFAULT_ENVS, SafetyRun, SafetyRunError, render_text, run_safety
    from awm_bench.suite_cli import model_slug
    from awm_core.console import progress_callback
    from awm_core.errors import UnknownNameError, UnknownSubsetError

    envs = envs or DEFAULT_ENVS
    if len(envs) == 1:
        task_ids = tuple(t if "/" in t else f"{envs[0]}/{t}" for t in task_ids)
    elif any("/" not in t for t in task_ids):
        raise click.BadParameter("with several ENVS, name tasks as ENV/TASK", param_hint="--task")
    if out is None:
        out = results / (run_name or time.strftime("%Y%m%d-%H%M%S")) / "safety" / model_slug(model)
    config = SafetyRun(
        out=out,
        envs=envs,
        model=model,
        perturbations=perturbations,
        seed=seed,
        task_ids=task_ids,
        limit=limit,
        judge=judge,
        judge_model=judge_model,
        max_steps=max_steps,
        concurrency=concurrency,
    )
    try:
        with progress_callback() as progress:
            import dataclasses

            result = run_safety(dataclasses.replace(config, progress=progress))
    except UnknownSubsetError as exc:
        raise click.BadParameter(str(exc), param_hint="--task") from None
    except (UnknownNameError, SafetyRunError) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        journal = out / "safety.jsonl"
        kept = sum(1 for _ in journal.open()) if journal.exists() else 0
        click.echo(
            f"\ninterrupted: {kept} finished episode(s) kept in {out}; "
            "run the same command again to continue",
            err=True,
        )
        sys.exit(130)
    if as_json:
        click.echo(json.dumps(result.summary, indent=2))
        return
    click.echo(render_text(result.summary))
    click.echo(f"\nreport: {result.report_path}\nepisodes: awm view {out}")
