"""``awm envs validate [ENV...] [--json]``: prove the catalog's (or given bundles') tasks.

Importing this module attaches the command to the ``envs`` group of
:mod:`awm_envs.cli.main` (the plugin imports it when it registers that group).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from awm_core.console import make_console
from awm_envs.sandbox import IsolationUnavailable, SandboxStartError
from awm_envs.validation.validate import EnvValidation, validate_catalog


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def render_table(results: list[EnvValidation], console: Console | None = None) -> None:
    """Print one row per task, plus a row per environment-level problem."""
    if console is None:
        console = make_console()  # pipes and CI logs: the table is not squeezed into 80 columns
    table = Table(title="awm envs validate")
    table.add_column("env")
    table.add_column("task", overflow="fold", min_width=24)
    for col in (
        "complexity",
        "calls",
        "initial not complete",
        "reference complete",
        "wrong rejected",
        "proof",
    ):
        table.add_column(col)
    for env in results:
        for problem in env.problems:
            table.add_row(
                env.env_id, "[red](environment)[/red]", "", "", "", "", f"[red]{problem}[/red]"
            )
        for t in env.tasks:
            label = t.task_id + (" (refusal)" if t.expects_refusal else "")
            complexity = (
                t.complexity.value if t.complexity_ok else f"[red]{t.complexity.value}[/red]"
            )
            table.add_row(
                env.env_id,
                label,
                complexity,
                str(t.reference_calls),
                _mark(t.initial_not_complete),
                "-" if t.unproven else _mark(t.reference_complete),  # no reference to replay
                "-" if t.unproven else _mark(t.wrong_rejected),
                {"proven": "[green]proven[/]", "unproven": "[yellow]unproven[/]"}.get(
                    t.proof, "[red]failed[/]"
                ),
            )
    console.print(table)
    for env in results:
        for t in env.tasks:
            for problem in t.problems:
                console.print(f"[red]{env.env_id}/{t.task_id}[/red]: {problem}")
            for c in t.checks:
                if not c.ok and not c.verifier_error:
                    verdict = "complete" if c.complete else "not complete"
                    console.print(
                        f"[red]{env.env_id}/{t.task_id}[/red]: {c.kind} ({c.description}) judged {verdict}"
                    )
    n_tasks = sum(len(e.tasks) for e in results)
    n_ok = sum(t.proven for e in results for t in e.tasks)
    n_unproven = sum(t.proof == "unproven" for e in results for t in e.tasks)
    colour = "green" if all(e.passed for e in results) else "red"
    unproven = f", {n_unproven} unproven (no reference solution)" if n_unproven else ""
    console.print(
        f"[{colour}]{n_ok}/{n_tasks} tasks proven{unproven} in {len(results)} environment(s)"
        f"[/{colour}]"
    )


def _bundle_args(envs: tuple[str, ...]) -> list[str]:
    """ENV arguments minus plain files: ``validate DIR/*`` also matches ``import-report.json``."""
    kept = []
    for ref in envs:
        if Path(ref).is_file():
            click.echo(f"skipping {ref}: a file, not a bundle folder", err=True)
            continue
        kept.append(ref)
    if envs and not kept:
        raise click.UsageError("no bundle folders among the arguments (only files)")
    return kept


def _validate_with_progress(
    envs: list[str], validate: Callable[[list[str] | None], list[EnvValidation]]
) -> list[EnvValidation]:
    """One environment at a time, with a progress bar on stderr (gone when done)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from awm_envs.validation.validate import catalog_env_ids

    ids = envs or catalog_env_ids()
    results: list[EnvValidation] = []
    with Progress(
        TextColumn("validating {task.fields[env]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=make_console(stderr=True),
        transient=True,
    ) as progress:
        bar = progress.add_task("validate", total=len(ids), env="")
        for ref in ids:
            progress.update(bar, env=ref)
            results += validate([ref])
            progress.advance(bar)
    return results


@click.command(name="validate")
@click.argument("envs", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the full results as JSON.")
@click.option(
    "--catalog",
    "catalogs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of bundles to search (repeatable); AWM_ENV_PATH works too.",
)
@click.option(
    "--sandbox/--no-sandbox",
    default=None,
    help="Run verifiers in awm-verify's sandbox (default: for bundles outside the shipped "
    "catalog, when awm-verify is installed) or in this process.",
)
@click.option(
    "--require-proof",
    is_flag=True,
    help="Fail tasks without a reference solution (imported ones) instead of reporting "
    "them unproven.",
)
def validate_command(
    envs: tuple[str, ...],
    as_json: bool,
    catalogs: tuple[Path, ...],
    sandbox: bool | None,
    require_proof: bool,
) -> None:
    """Prove every task: not complete initially, solved by its reference, wrong attempts rejected.

    ENV is a catalog id or a bundle folder; none means the whole catalog.
    Tasks without a reference solution (imported from AWM-1K) get the checks that need
    none and are reported unproven, not failed, unless --require-proof.
    Exits non-zero if any task fails.
    """
    try:
        results = _validate_with_progress(
            _bundle_args(envs),
            lambda one: validate_catalog(
                one,
                extra=list(catalogs) or None,
                sandbox=sandbox,
                require_proof=require_proof,
            ),
        )
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from exc
    except (IsolationUnavailable, SandboxStartError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        payload = [
            {
                **r.model_dump(mode="json"),
                "passed": r.passed,
                "tasks": [
                    {**t.model_dump(mode="json"), "passed": t.passed, "proof": t.proof}
                    for t in r.tasks
                ],
            }
            for r in results
        ]
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        render_table(results)
    if not results or not all(r.passed for r in results):
        sys.exit(1)
