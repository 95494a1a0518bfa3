"""``awm envs init NAME``: scaffold a new environment bundle that validates as generated."""

from __future__ import annotations

import json
from pathlib import Path

import click

from awm_envs.bundle.identity import BUNDLE_FILES
from awm_envs.scaffold.init import ScaffoldError


@click.command(name="init")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to write the bundle into (default: ./NAME).",
)
@click.option(
    "--force", is_flag=True, help="Write into a non-empty folder, overwriting bundle files."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def init_command(name: str, directory: Path | None, force: bool, as_json: bool) -> None:
    """Create a new environment bundle NAME: a small to-do app to replace with your own.

    Writes manifest.json, schema.sql and seed.sql, app.py (the tools), tools.json
    (derived from the app), tasks.json (two tasks with reference solutions) and
    verifiers.py. It passes `awm envs validate` as written; see
    docs/environment-format.md for what each file holds.
    """
    from awm_envs.scaffold.init import init_bundle

    try:
        path = init_bundle(name, directory, force=force)
    except ScaffoldError as exc:
        if as_json:
            click.echo(json.dumps({"error": type(exc).__name__, "message": str(exc)}, indent=2))
            raise SystemExit(1) from None
        raise click.ClickException(str(exc)) from exc
    files = sorted(name for name in BUNDLE_FILES if (path / name).is_file())
    if as_json:
        click.echo(json.dumps({"env_id": name, "path": str(path), "files": files}, indent=2))
        return
    click.echo(f"created {path}/ ({', '.join(files)})")
    click.echo("next:")
    click.echo(f"  awm envs validate {path}        # prove its tasks")
    click.echo(f"  awm envs serve {path} --stdio   # serve its tools over MCP")
    click.echo(f"  awm envs push {path} OWNER/{name}")
