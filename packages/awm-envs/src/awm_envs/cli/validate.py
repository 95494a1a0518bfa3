"""``awm envs validate [ENV...] [--json]``: prove the catalog's (or given bundles') tasks.

Importing this module attaches the command to the ``envs`` group of
:mod:`awm_envs.cli.main` (the plugin imports it when it registers that group).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from awm_core.console import make_console
from awm_envs.errors import JudgeUnavailableError
from awm_envs.sandbox import IsolationUnavailable, SandboxStartError
from awm_envs.validation.journal import ValidationJournal
from awm_envs.validation.results import TaskValidation, TrajectoryCheck
from awm_envs.validation.validate import EnvValidation, validate_catalog

if TYPE_CHECKING:
    from awm_envs.verifiers.pool import VerifierPool

PROOF_MARKS = {
    "proven": "[green]proven[/]",
    "unproven": "[yellow]unproven[/]",
    "undecided": "[yellow]undecided[/]",
}


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def _column(t: TaskValidation, kinds: tuple[str, ...] | None, ok: bool) -> str:
    """One property's cell: ``-`` without a reference, ``?`` when a check behind it was left
    undecided (an evidence-only verifier and no judge model), else yes/NO."""
    if t.unproven and kinds != ("initial",):
        return "-"  # no reference to replay
    behind: list[TrajectoryCheck] = [
        c
        for c in t.checks
        if (c.kind in kinds if kinds else c.kind not in ("initial", "reference"))
    ]
    if ok is False and any(c.undecided for c in behind):
        return "[yellow]?[/yellow]"
    return _mark(ok)


def _decided(t: TaskValidation) -> str:
    if t.decided_by == "judge":
        return f"judge {t.judge_model}"
    return t.decided_by


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
        "decided by",
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
                _column(t, ("initial",), t.initial_not_complete),
                _column(t, ("reference",), t.reference_complete),
                _column(t, None, t.wrong_rejected),
                PROOF_MARKS.get(t.proof, "[red]failed[/]"),
                _decided(t),
            )
    console.print(table)
    for env in results:
        for t in env.tasks:
            for problem in t.problems:
                console.print(f"[red]{env.env_id}/{t.task_id}[/red]: {problem}")
            if t.proof == "undecided":
                for note in t.notes:
                    console.print(f"[yellow]{env.env_id}/{t.task_id}[/yellow]: undecided: {note}")
            for c in t.checks:
                if not c.ok and not c.verifier_error and not c.judge_error and not c.undecided:
                    verdict = "complete" if c.complete else "not complete"
                    console.print(
                        f"[red]{env.env_id}/{t.task_id}[/red]: {c.kind} ({c.description}) judged {verdict}"
                    )
    n_tasks = sum(len(e.tasks) for e in results)
    n_ok = sum(t.proven for e in results for t in e.tasks)
    n_unproven = sum(t.proof == "unproven" for e in results for t in e.tasks)
    n_undecided = sum(t.proof == "undecided" for e in results for t in e.tasks)
    n_judged = sum(t.decided_by == "judge" for e in results for t in e.tasks)
    colour = "green" if all(e.passed for e in results) else "red"
    unproven = f", {n_unproven} unproven (no reference solution)" if n_unproven else ""
    if n_undecided:
        unproven += f", {n_undecided} undecided (sql-mode verifier: pass --judge-model SPEC)"
    if n_judged:
        unproven += f", {n_judged} decided by a judge"
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
    envs: list[str],
    validate: Callable[[list[str] | None], list[EnvValidation]],
    journal: ValidationJournal | None = None,
    extra: list[Path] | None = None,
) -> list[EnvValidation]:
    """One environment at a time, with a progress bar on stderr (gone when done).

    With a ``journal``, an environment it holds (same content, same options) is taken
    from it, and each one validated here is added to it as soon as it is done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from awm_envs.validation.validate import catalog_env_ids, resolve_env_dir

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
            env_dir = resolve_env_dir(ref, extra=extra) if journal is not None else None
            done = journal.lookup(env_dir) if journal is not None and env_dir else None
            if done is None:
                done = validate([ref])
                if journal is not None and env_dir is not None:
                    journal.record(env_dir, done)
            results += done
            progress.advance(bar)
    return results


class _SharedSandbox:
    """One verifier sandbox for every environment of a run that needs one.

    Validating a bundle on its own starts a sandbox template and stops it at the end;
    over the AWM-1K release's 1,000 bundles that was about 5% of validation. Every
    verification is a fresh fork of the clean template, so sharing the template
    shares nothing between environments' verifiers.
    """

    def __init__(self, sandbox: bool | None, extra: list[Path] | None) -> None:
        self.sandbox, self.extra = sandbox, extra
        self._pool: VerifierPool | None = None

    def pool_for(self, ref: str) -> VerifierPool | None:
        """The shared sandbox when ``ref`` runs its verifiers sandboxed, else ``None``
        (the shipped catalog's bundles run in this process unless ``--sandbox``)."""
        from awm_envs.validation.validate import in_catalog, resolve_env_dir

        if self.sandbox is False:
            return None
        if self.sandbox is None and in_catalog(resolve_env_dir(ref, extra=self.extra)):
            return None
        if self._pool is None:
            from awm_envs.verifiers.pool import VerifierPool

            self._pool = VerifierPool(size=1)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


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
    help="Fail tasks without a reference solution (imported ones), and tasks whose "
    "evidence-only verifier no judge decided, instead of reporting them unproven/undecided.",
)
@click.option(
    "--judge-model",
    "judge_model",
    default=None,
    metavar="SPEC",
    help="Decide tasks whose verifier only gathers evidence (AWM-1K sql mode) with the "
    "code-augmented judge on this backend (openai:MODEL, ...; see `awm llm`). Without "
    "it they are reported undecided.",
)
@click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append each environment's result to this JSON-lines file as it finishes; a "
    "rerun with the same file takes unchanged bundles' results from it (same content, "
    "same options), so a killed run continues where it stopped.",
)
def validate_command(
    envs: tuple[str, ...],
    as_json: bool,
    catalogs: tuple[Path, ...],
    sandbox: bool | None,
    require_proof: bool,
    judge_model: str | None,
    journal: Path | None,
) -> None:
    """Prove every task: not complete initially, solved by its reference, wrong attempts rejected.

    ENV is a catalog id or a bundle folder; none means the whole catalog.
    Tasks without a reference solution (imported from AWM-1K) get the checks that need
    none and are reported unproven, not failed, unless --require-proof.
    Tasks whose verifier only gathers evidence (AWM-1K sql mode) are decided by the
    code-augmented judge with --judge-model (the evidence and the task's criteria; only
    Completed counts as complete), else reported undecided.
    Exits non-zero if any task fails. With --journal a killed run, rerun with the same
    command, validates only the environments it had not finished.
    """
    from awm_envs.validation.judge import EvidenceJudge

    try:
        judge = EvidenceJudge(judge_model) if judge_model else None
    except JudgeUnavailableError as exc:
        raise click.UsageError(str(exc)) from exc
    record = (
        ValidationJournal(
            journal,
            {"sandbox": sandbox, "require_proof": require_proof, "judge_model": judge_model},
        )
        if journal is not None
        else None
    )
    sandboxes = _SharedSandbox(sandbox, list(catalogs) or None)
    try:
        results = _validate_with_progress(
            _bundle_args(envs),
            lambda one: validate_catalog(
                one,
                verifier_pool=sandboxes.pool_for(one[0]) if one else None,
                extra=list(catalogs) or None,
                sandbox=sandbox,
                require_proof=require_proof,
                judge=judge,
            ),
            record,
            list(catalogs) or None,
        )
    except FileNotFoundError as exc:
        raise click.UsageError(str(exc)) from exc
    except (IsolationUnavailable, SandboxStartError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        sandboxes.close()
        if judge is not None:
            judge.close()
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
