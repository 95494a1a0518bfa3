"""``awm envs pull`` / ``awm envs push``: environment bundles on the Hugging Face hub.

Both need the ``[hub]`` extra (``pip install 'awm-envs[hub]'``). The work is in
:mod:`awm_envs.hub`; this module parses options and prints results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import click

from awm_envs.hub.client import REPO_TYPES
from awm_envs.hub.errors import HubError

_endpoint_option = click.option(
    "--endpoint",
    metavar="URL",
    default=None,
    help="The hub to talk to (default: HF_ENDPOINT, else https://huggingface.co).",
)
_repo_type_option = click.option(
    "--repo-type",
    type=click.Choice(REPO_TYPES),
    default="dataset",
    show_default=True,
    help="The kind of hub repository that holds the bundle.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _fail(exc: Exception, as_json: bool) -> NoReturn:
    """Stop with exit code 1: the error as JSON on stdout with --json, else its message."""
    if as_json:
        click.echo(json.dumps({"error": type(exc).__name__, "message": str(exc)}, indent=2))
        raise SystemExit(1)
    raise click.ClickException(str(exc))


def _emit(data: dict[str, Any]) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


@click.command(name="pull")
@click.argument("repo_id", metavar="OWNER/NAME")
@click.option("--revision", default=None, help="Branch, tag or commit (default: main).")
@click.option(
    "--as",
    "name",
    default=None,
    help="Local name to install it under (default: the manifest's id).",
)
@click.option(
    "--force", is_flag=True, help="Replace a different bundle installed under the same name."
)
@_repo_type_option
@_endpoint_option
@_json_option
def pull_command(
    repo_id: str,
    revision: str | None,
    name: str | None,
    force: bool,
    repo_type: str,
    endpoint: str | None,
    as_json: bool,
) -> None:
    """Download an environment bundle from the Hugging Face hub into the local cache.

    The files are checked against the content record pushed with them
    (awm-bundle.json: sha256 of every file) and the manifest before anything
    is installed into $AWM_CACHE_DIR/envs/ID (default ~/.cache/awm/envs; ID is
    the manifest's id, or --as). Afterwards every command finds it by ID, e.g.
    awm envs validate ID. Pulling runs none of its code; the code is untrusted
    (docs/security.md): serve it with --workers N to run its tools sandboxed.
    """
    from awm_envs.hub.client import pull_bundle

    try:
        pulled = pull_bundle(
            repo_id,
            revision=revision,
            name=name,
            repo_type=repo_type,
            endpoint=endpoint,
            force=force,
        )
    except HubError as exc:
        _fail(exc, as_json)
    if as_json:
        _emit(pulled.to_json())
        return
    click.echo(
        f"pulled {pulled.repo_id}@{pulled.commit[:12]} as {pulled.name!r} "
        f"({len(pulled.files)} files, digest {pulled.digest[:12]}, checked)"
    )
    click.echo(f"  {pulled.path}")
    click.echo(
        f"next: awm envs validate {pulled.name}   |   awm envs serve {pulled.name} --stdio --workers 1"
    )


@click.command(name="push")
@click.argument("env")
@click.argument("repo_id", metavar="OWNER/NAME")
@click.option(
    "--private/--public",
    default=None,
    help="Visibility of a repository this creates (default: the hub's default).",
)
@click.option("--revision", default=None, help="Branch to commit to (default: main).")
@click.option("--message", "-m", default=None, help="Commit message.")
@_repo_type_option
@_endpoint_option
@_json_option
def push_command(
    env: str,
    repo_id: str,
    private: bool | None,
    revision: str | None,
    message: str | None,
    repo_type: str,
    endpoint: str | None,
    as_json: bool,
) -> None:
    """Upload the bundle ENV (a folder or an id) to hub repository OWNER/NAME.

    The bundle must load (awm envs show ENV lists any problem); otherwise nothing
    is uploaded. Creates the repository if needed and makes one commit with the
    bundle's files and awm-bundle.json, the content record awm envs pull checks.
    Needs a token with write access: HF_TOKEN or `hf auth login`.
    """
    from awm_envs.bundle.sources import resolve_env
    from awm_envs.errors import EnvironmentNotFoundError
    from awm_envs.hub.client import push_bundle

    try:
        path = resolve_env(env) if not Path(env).is_dir() else Path(env)
        pushed = push_bundle(
            path,
            repo_id,
            repo_type=repo_type,
            private=private,
            revision=revision,
            endpoint=endpoint,
            message=message,
        )
    except (HubError, EnvironmentNotFoundError) as exc:
        _fail(exc, as_json)
    if as_json:
        _emit(pushed.to_json())
        return
    deleted = f", removed {', '.join(pushed.deleted)}" if pushed.deleted else ""
    click.echo(
        f"pushed {pushed.env_id} to {pushed.repo_id} ({len(pushed.files)} files{deleted}, "
        f"digest {pushed.digest[:12]})"
    )
    click.echo(f"  {pushed.commit_url}")
    click.echo(f"pull it with: awm envs pull {pushed.repo_id}")
