"""``awm envs import-awm`` / ``export-awm``: the official AWM-1K release layout, both ways."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from awm_envs.awm1k.convert import DEFAULT_REFERENCE_TIME
from awm_envs.awm1k.export import export_awm
from awm_envs.awm1k.importer import ImportResult, import_awm, totals
from awm_envs.awm1k.read import ReleaseError


@click.command(name="import-awm")
@click.argument("release", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write bundles into (resumable).",
)
@click.option(
    "--reference-time",
    type=click.DateTime(),
    default=DEFAULT_REFERENCE_TIME.isoformat(),
    show_default=True,
    help="The frozen 'now' that replaces datetime('now') in seed data.",
)
@click.option("--workers", type=int, default=None, help="Worker processes (default: one per core).")
@click.option("--only", multiple=True, help="Import only these scenarios (repeatable).")
@click.option(
    "--retry-failed", is_flag=True, help="Try again scenarios that failed in an earlier run."
)
@click.option("--json", "as_json", is_flag=True, help="Print the import report as JSON.")
def import_awm_command(
    release: Path,
    out: Path,
    reference_time: datetime,
    workers: int | None,
    only: tuple[str, ...],
    retry_failed: bool,
    as_json: bool,
) -> None:
    """Convert an official AWM-1K release folder (gen_*.jsonl) into awm bundles.

    Scenarios that cannot be imported are listed with the reason (also in
    OUT/import-report.json); finished bundles are kept, so rerunning resumes.
    """
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        console=console,
        disable=as_json,
    ) as bar:
        task = bar.add_task("import", total=None, last="")

        def tick(result: ImportResult) -> None:
            bar.update(task, advance=1, last=f"{result.scenario}: {result.status}")

        try:
            results, problems = import_awm(
                release,
                out,
                reference_time=reference_time,
                workers=workers,
                only=list(only) or None,
                retry_failed=retry_failed,
                progress=tick,
            )
        except (ReleaseError, FileNotFoundError) as exc:
            raise click.ClickException(str(exc)) from None
    failed = [r for r in results if r.status == "failed"]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "counts": {
                        s: sum(r.status == s for r in results)
                        for s in ("imported", "skipped", "failed")
                    },
                    "totals": totals(results),
                    "results": [asdict(r) for r in results],
                    "release_problems": [asdict(p) for p in problems],
                },
                indent=2,
            )
        )
    else:
        table = Table(title=f"AWM-1K import into {out}")
        for col in ("scenario", "status", "tools", "tasks", "notes"):
            table.add_column(col)
        for r in results:
            notes = "; ".join(f"{p.stage}: {p.message}" for p in r.problems[:3])
            style = {"failed": "red", "imported": "green"}.get(r.status, "")
            table.add_row(
                r.scenario,
                f"[{style}]{r.status}[/]" if style else r.status,
                str(r.tools or ""),
                str(r.tasks or ""),
                notes,
            )
        Console().print(table)
        for p in problems:
            console.print(f"[yellow]release:[/] {p.stage}: {p.scenario}: {p.message}")
        console.print(
            f"{len(results) - len(failed)} of {len(results)} scenarios available in {out}"
        )
    if results and len(failed) == len(results):
        raise SystemExit(1)  # nothing usable came out: a script should notice


@click.command(name="export-awm")
@click.argument("envs_", metavar="ENV...", nargs=-1, required=True)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the gen_*.jsonl files.",
)
@click.option(
    "--catalog",
    "catalogs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Extra folder of bundles.",
)
@click.option("--json", "as_json", is_flag=True, help="Print line counts per file as JSON.")
def export_awm_command(
    envs_: tuple[str, ...], out: Path, catalogs: tuple[Path, ...], as_json: bool
) -> None:
    """Write environments in the official AWM-1K layout (gen_*.jsonl)."""
    from awm_envs.bundle.sources import resolve_env

    paths = [resolve_env(ref, list(catalogs) or None) for ref in envs_]
    counts = export_awm(paths, out)
    if as_json:
        click.echo(json.dumps(counts, indent=2))
    else:
        for name, n in counts.items():
            click.echo(f"{out / name}: {n} lines")
