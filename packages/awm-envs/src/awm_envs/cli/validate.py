"""``awm envs validate [ENV...] [--json]``: prove the catalog's (or given bundles') tasks.

Importing this module attaches the command to the ``envs`` group of
:mod:`awm_envs.cli.main` (the plugin imports it when it registers that group).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from awm_envs.sandbox import IsolationUnavailable, SandboxStartError
from awm_envs.validation.validate import EnvValidation, validate_catalog
from awm_envs.validation.verifier_runner import VerifierSandboxUnavailable


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def render_table(results: list[EnvValidation], console: Console | None = None) -> None:
    """Print one row per task, plus a row per environment-level problem."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # pipes and CI logs: do not squeeze the table into 80 columns
            console = Console(width=140)
    table = Table(title="awm envs validate")
    table.add_column("env")
    table.add_column("task", overflow="fold", min_width=24)
    for col in (
        "complexity",
        "calls",
        "initial not complete",
        "reference complete",
        "wrong rejected",
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
                _mark(t.reference_complete),
                _mark(t.wrong_rejected),
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
    n_ok = sum(t.passed for e in results for t in e.tasks)
    colour = "green" if all(e.passed for e in results) else "red"
    console.print(
        f"[{colour}]{n_ok}/{n_tasks} tasks proven in {len(results)} environment(s)[/{colour}]"
    )


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
def validate_command(
    envs: tuple[str, ...], as_json: bool, catalogs: tuple[Path, ...], sandbox: bool | None
) -> None:
    """Prove every task: not complete initially, solved by its reference, wrong attempts rejected.

    ENV is a catalog id or a bundle folder; none means the whole catalog.
    Exits non-zero if any task fails.
    """
    try:
        results = validate_catalog(
            list(envs) or None, extra=list(catalogs) or None, sandbox=sandbox
        )
    except (FileNotFoundError, VerifierSandboxUnavailable) as exc:
        raise click.UsageError(str(exc)) from exc
    except (IsolationUnavailable, SandboxStartError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        payload = [
            {
                **r.model_dump(mode="json"),
                "passed": r.passed,
                "tasks": [{**t.model_dump(mode="json"), "passed": t.passed} for t in r.tasks],
            }
            for r in results
        ]
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        render_table(results)
    if not results or not all(r.passed for r in results):
        sys.exit(1)
