"""``awm envs prove ENV --model BACKEND``: find reference solutions for unproven tasks."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

import click

from awm_envs.validation.prove import (
    PROVE_SETTINGS,
    Attempt,
    default_report_path,
    prove_environment,
)


@click.command(name="prove")
@click.argument("env")
@click.option(
    "--model",
    "model",
    required=True,
    help="LLM backend spec (openai:MODEL, local:..., scripted:REPLIES.json; see `awm llm`).",
)
@click.option(
    "--attempts",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Episodes per task at most, over all runs (a rerun spends only those left).",
)
@click.option("--max-steps", default=20, show_default=True, type=click.IntRange(min=1))
@click.option("--task", "task_ids", multiple=True, help="Only these task ids (repeatable).")
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The resumable report (default: ENV_FOLDER.prove.json beside the bundle).",
)
@click.option(
    "--catalog",
    "catalogs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of bundles to search (repeatable).",
)
@click.option(
    "--judge-model",
    "judge_model",
    default=None,
    metavar="SPEC",
    help="Decide episodes whose verifier only gathers evidence (AWM-1K sql mode) with the "
    "code-augmented judge on this backend (openai:MODEL, ...). Without it such tasks are "
    "tried once and skipped.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def prove_command(
    env: str,
    model: str,
    attempts: int,
    max_steps: int,
    task_ids: tuple[str, ...],
    report_path: Path | None,
    catalogs: tuple[Path, ...],
    judge_model: str | None,
    as_json: bool,
) -> None:
    """Run an agent on ENV's unproven tasks (imported ones have no reference solution).

    A trajectory becomes the task's reference solution (written to tasks.json) only
    when the verifier says complete and `awm envs validate`'s checks then hold: it
    replays cleanly, the initial state is not complete, and its corruptions (the last
    write dropped, a wrong answer, doing nothing) are rejected. Verifiers run in the
    sandbox. Resumable: proven tasks are kept and attempts already spent count.
    A verifier that only gathers evidence (AWM-1K sql mode) cannot say complete:
    with --judge-model the code-augmented judge decides from its evidence and the
    task's criteria (the episode and the checks alike; only Completed counts), and
    the report says which tasks a judge decided and with which model.
    Exits 1 when a task is left unproven.
    """
    from awm_core import get_backend
    from awm_envs.errors import JudgeUnavailableError
    from awm_envs.validation.judge import EvidenceJudge
    from awm_envs.validation.validate import in_catalog, resolve_env_dir
    from awm_envs.verifiers.pool import VerifierPool

    try:
        bundle = resolve_env_dir(env, extra=list(catalogs) or None)
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from exc
    backend = get_backend(model)
    try:
        judge = EvidenceJudge(judge_model) if judge_model else None
    except JudgeUnavailableError as exc:
        raise click.UsageError(str(exc)) from exc
    sandboxed = None if in_catalog(bundle) else VerifierPool(size=1)

    def tick(task_id: str, attempt: Attempt) -> None:
        if not as_json:
            mark = "kept" if attempt.accepted else "not kept"
            click.echo(f"{task_id} attempt {attempt.attempt}: {mark}: {attempt.reason}", err=True)

    try:
        report = asyncio.run(
            prove_environment(
                bundle,
                backend,
                attempts=attempts,
                report_path=report_path,
                verifier_pool=sandboxed,
                task_ids=list(task_ids) or None,
                settings=replace(PROVE_SETTINGS, max_steps=max_steps),
                progress=tick,
                judge=judge,
            )
        )
    finally:
        if sandboxed is not None:
            sandboxed.close()
        if judge is not None:
            judge.close()
    counts = report.counts()
    if as_json:
        click.echo(json.dumps({**asdict(report), "counts": counts}, indent=2))
    else:
        for proof in report.tasks.values():
            click.echo(f"{proof.task_id}: {proof.status} ({proof.note})")
        where = report_path or default_report_path(bundle)
        click.echo(
            f"{counts['proven']} proven, {counts['unproven']} unproven, "
            f"{counts['skipped']} skipped; report: {where}"
        )
    if counts["unproven"]:
        sys.exit(1)
