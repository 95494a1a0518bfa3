"""``awm envs``: browse, inspect, call, serve and benchmark environments.

The group is named ``envs`` so other modules (``awm envs validate``) can attach
commands to it. Every command takes a catalog id or a bundle folder path.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from awm_core.lazycli import LazyGroup


def _emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def catalog_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--catalog DIR`` (repeatable): extra folders of bundles to search, before AWM_ENV_PATH."""

    @click.option(
        "--catalog",
        "catalogs",
        multiple=True,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="A folder of bundles to search (repeatable); AWM_ENV_PATH works too.",
    )
    @functools.wraps(fn)
    def wrapper(*args: Any, catalogs: tuple[Path, ...], **kwargs: Any) -> Any:
        return fn(*args, catalogs=list(catalogs), **kwargs)

    return wrapper


@click.group(name="envs", cls=LazyGroup)
def envs() -> None:
    """Environments: list, show, call, serve over MCP, validate, AWM-1K import and export."""


@envs.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@catalog_option
def list_command(as_json: bool, catalogs: list[Path]) -> None:
    """List environments: domain, size, tools, tasks per bucket and validation status.

    The status is the last awm envs validate result for the bundle's current
    content, or for the shipped catalog the result shipped with it ("not
    validated" after an edit).
    """
    from awm_envs.bundle.sources import list_envs
    from awm_envs.validation.catalog_stats import catalog_stats
    from awm_envs.validation.record import load_record, shipped_record, status_text

    rows = []
    for env_id, source, path in list_envs(catalogs):
        info: dict[str, Any] = {"id": env_id, "source": source, "path": str(path)}
        try:
            manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
            info.update(name=manifest.get("name", ""), category=manifest.get("category", ""))
            stats = catalog_stats(path)
            info.update(
                tables=stats.tables,
                rows=stats.rows,
                tools=stats.tools,
                tasks=stats.tasks,
                tasks_per_bucket=stats.tasks_per_bucket,
                refusal_tasks=stats.refusal_tasks,
            )
        except Exception as exc:  # a broken bundle is listed with its problem, not skipped
            info.update(
                name=info.get("name", ""), category=info.get("category", ""), error=str(exc)[:200]
            )
        # this machine's last `awm envs validate` of this exact content, else the record
        # shipped with the catalog (also keyed by content: an edited bundle has none)
        record = load_record(info.get("id", env_id), path) or shipped_record(env_id, path)
        info["validation"] = record
        rows.append(info)
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        click.echo("no environments found (add --catalog DIR or set AWM_ENV_PATH)")
        return
    from rich.table import Table

    from awm_core.console import make_console

    table = Table(title="awm environments")
    for col in (
        "id",
        "domain",
        "tables",
        "rows",
        "tools",
        "tasks (e/m/h/vh)",
        "validation",
        "source",
    ):
        table.add_column(col, justify="right" if col in {"tables", "rows", "tools"} else "left")
    for r in rows:
        buckets = r.get("tasks_per_bucket") or {}
        spread = "/".join(str(buckets.get(b, 0)) for b in ("easy", "medium", "hard", "very_hard"))
        status = (
            status_text(r["validation"])
            if "error" not in r
            else f"[red]broken: {r['error'][:60]}[/red]"
        )
        if status.startswith("proven"):
            status = f"[green]{status}[/green]"
        elif status.startswith("FAILED"):
            status = f"[red]{status}[/red]"
        table.add_row(
            r["id"],
            r.get("category", ""),
            str(r.get("tables", "")),
            str(r.get("rows", "")),
            str(r.get("tools", "")),
            f"{r.get('tasks', '')} ({spread})" if buckets else "",
            status,
            r["source"],
        )
    make_console().print(table)


@envs.command(name="show")
@click.argument("env")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON (manifest, tools with schemas, row counts per table, tasks in full).",
)
@click.option("--schema", "show_schema", is_flag=True, help="Draw the tables with their keys.")
@catalog_option
def show_command(env: str, as_json: bool, show_schema: bool, catalogs: list[Path]) -> None:
    """Show an environment: manifest, tools with parameters, tables and tasks.

    A bundle outside the shipped catalog is loaded in a sandbox worker, not here.
    """
    view = _bundle_view(env, catalogs)
    if show_schema:
        from awm_envs.bundle.schema_view import describe_schema, render_schema

        described = describe_schema(view.template)
        if as_json:
            _emit_json(described)
        else:
            render_schema(view.id, described)
        return
    tables = _row_counts(view.template, view.tables)
    if as_json:
        _emit_json(
            {
                "manifest": view.manifest.model_dump(mode="json"),
                "path": str(view.path),
                "tools": [t.model_dump(mode="json") for t in view.tools],
                "tables": tables,
                "tasks": [t.model_dump(mode="json") for t in view.tasks],
                "template_bytes": len(view.template),
            }
        )
        return
    from awm_core.argcheck import signature

    m = view.manifest
    click.echo(f"{m.id}: {m.name} ({m.category}, v{m.version})\n{m.description}\n{view.path}\n")
    click.echo(f"tools ({len(view.tools)}):")
    for t in view.tools:
        click.echo(
            f"  {signature(t.name, t.input_schema)}\n      {t.description.splitlines()[0] if t.description else ''}"
        )
    click.echo(
        f"\ntables ({len(tables)}, {sum(tables.values())} rows): "
        + ", ".join(f"{k}={v}" for k, v in tables.items())
    )
    click.echo(f"\ntasks ({len(view.tasks)}):")
    for t in view.tasks:
        calls = len(t.reference_solution or [])
        refusal = ", refusal" if t.expects_refusal else ""
        click.echo(
            f"  {t.id} [{t.complexity.value}, {calls} calls{refusal}]\n      {t.instruction}"
        )


def _bundle_view(env: str, catalogs: list[Path]) -> Any:
    """What ``show`` prints: loaded here for the shipped catalog, in a sandbox worker otherwise."""
    from awm_envs.bundle.sources import resolve_env
    from awm_envs.pool.preflight import BundleDescription, describe_bundle, trusted

    path = resolve_env(env, extra=catalogs)
    if not trusted(path):
        return describe_bundle(path)
    if (path / "tools.json").is_file():  # the shipped catalog: read the files, import nothing
        return _files_view(path)
    from awm_envs.runtime.environment import load_environment

    e = load_environment(path)
    return BundleDescription(
        path=e.path,
        manifest=e.bundle.manifest,
        tools=e.tools,
        tasks=e.tasks,
        tables=e.bundle.tables,
        template=e.template,
    )


def _files_view(path: Path) -> Any:
    """What ``show`` prints, from a bundle's files alone (its tools.json, tasks.json, SQL)."""
    from pydantic import TypeAdapter

    from awm_core.models import EnvironmentManifest, Task, ToolSpec
    from awm_envs.bundle.loader import compile_template
    from awm_envs.pool.preflight import BundleDescription

    template, tables = compile_template(
        (path / "schema.sql").read_text(encoding="utf-8"),
        (path / "seed.sql").read_text(encoding="utf-8"),
    )
    return BundleDescription(
        path=path.resolve(),
        manifest=EnvironmentManifest.model_validate_json((path / "manifest.json").read_bytes()),
        tools=TypeAdapter(list[ToolSpec]).validate_json((path / "tools.json").read_bytes()),
        tasks=TypeAdapter(list[Task]).validate_json((path / "tasks.json").read_bytes()),
        tables=tables,
        template=template,
    )


def _row_counts(template: bytes, tables: list[str]) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(template)
        return {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        conn.close()


@envs.command(name="call")
@click.argument("env")
@click.argument("tool")
@click.option("--args", "args_json", default="{}", help="Tool arguments as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="Print the result and the row diff as JSON.")
@click.option(
    "--save-db",
    "save_db",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the database before and after the call to DIR/initial.db and DIR/final.db "
    "(SQLite files, e.g. for an official AWM verifier).",
)
@catalog_option
def call_command(
    env: str,
    tool: str,
    args_json: str,
    as_json: bool,
    save_db: Path | None,
    catalogs: list[Path],
) -> None:
    """Call one tool on a fresh instance; print the result and what changed in the database.

    A bundle outside the shipped catalog runs in a sandbox worker, not here.
    """
    from awm_core.dbdiff import diff_images
    from awm_envs.bundle.sources import resolve_env
    from awm_envs.pool.preflight import trusted

    try:
        arguments = json.loads(args_json)
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from None
    path = resolve_env(env, extra=catalogs)
    if trusted(path):
        from awm_envs.runtime.environment import load_environment

        with load_environment(path).instance() as inst:
            before = inst.snapshot_sync()
            result = inst.call_tool_sync(tool, arguments)
            after = inst.snapshot_sync()
    else:
        import asyncio

        result, before, after = asyncio.run(_call_in_worker(path, tool, arguments))
    if save_db is not None:
        save_db.mkdir(parents=True, exist_ok=True)
        (save_db / "initial.db").write_bytes(before)  # a snapshot is the SQLite file format
        (save_db / "final.db").write_bytes(after)
    changes = diff_images(before, after)
    if as_json:
        _emit_json(
            {"result": result.model_dump(mode="json"), "diff": changes.model_dump(mode="json")}
        )
    else:
        status = f"ERROR ({result.error_type})" if result.is_error else "ok"
        click.echo(f"{tool}: {status} in {result.latency_s * 1000:.2f} ms")
        content = result.content
        click.echo(
            content
            if isinstance(content, str)
            else json.dumps(content, indent=2, ensure_ascii=False)
        )
        click.echo("\nno database changes" if changes.is_empty else f"\n{changes.render()}")
    if result.is_error:
        sys.exit(1)


async def _call_in_worker(path: Path, tool: str, arguments: Any) -> tuple[Any, bytes, bytes]:
    """One call on a fresh instance in a sandbox worker: the result, the database before and after."""
    from awm_envs.pool.remote import WorkerDied, WorkerPool, WorkerRequestError

    try:
        async with WorkerPool(1) as pool:
            inst = await pool.create(path)
            before = await inst.snapshot()
            result = await inst.call_tool(tool, arguments)
            # a crashed or stopped call changed nothing (and its instance is gone)
            after = before if result.error_type == "environment_error" else await inst.snapshot()
            return result, before, after
    except (WorkerDied, WorkerRequestError, TimeoutError) as exc:
        raise click.ClickException(str(exc)) from None


def _preloading_factory(env: Any) -> tuple[list[Any], Any]:
    """Tools read from ``tools.json`` and an instance factory whose environment loads meanwhile."""
    import asyncio
    import threading

    from pydantic import TypeAdapter

    from awm_core.models import ToolSpec

    tools = TypeAdapter(list[ToolSpec]).validate_json((env.path / "tools.json").read_bytes())
    loaded = threading.Event()
    failure: list[BaseException] = []

    def load() -> None:
        try:
            env.tools  # noqa: B018  (the first attribute access loads the bundle)
        except BaseException as exc:  # reported to the first call, not lost in the thread
            failure.append(exc)
        finally:
            loaded.set()

    threading.Thread(target=load, name="awm-env-load", daemon=True).start()

    async def factory(key: str) -> Any:
        if not loaded.is_set():
            await asyncio.to_thread(loaded.wait)
        if failure:
            raise failure[0]
        return env.instance()

    return tools, factory


def _check_port(host: str, port: int) -> None:
    """Fail in one line when ``host:port`` cannot be bound (uvicorn would print a traceback)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise click.ClickException(f"cannot serve on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise click.ClickException(
                f"cannot serve on {host}:{port}: {exc.strerror or exc} "
                "(pick another --port, or stop the process using it)"
            ) from None


@envs.command(name="serve")
@click.argument("env")
@click.option("--stdio", is_flag=True, help="Serve one client over stdin/stdout.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--idle-timeout",
    default=1800.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Seconds before an idle session and its instance are closed (0: never).",
)
@click.option(
    "--max-sessions",
    default=10_000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Open HTTP sessions at most; at the cap the least recently used idle session is "
    "evicted for a new one, and a new client is refused (503) only if all are busy (0: no cap).",
)
@click.option(
    "--rate-limit",
    default=0.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Requests per second per client address over HTTP; above it the answer is 429 (0: off).",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(min=0),
    help="Run tool code in N sandboxed worker processes. Default: 0 (in this process) for the "
    "shipped catalog, 1 for any other bundle; see docs/security.md.",
)
@click.option(
    "--run-untrusted-code-in-process",
    "in_process",
    is_flag=True,
    help="With --workers 0, import a bundle from outside the catalog into this process: its "
    "app.py can then read your files and API keys. Only for code you wrote or reviewed.",
)
@click.option(
    "--token",
    default=None,
    help="Require 'Authorization: Bearer TOKEN' on every HTTP request (also AWM_MCP_TOKEN). "
    "Needed for a --host other than loopback, unless --no-auth.",
)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Serve beyond loopback without a token (a network where every peer is trusted).",
)
@click.option(
    "--call-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Per-call limit in sandbox workers.",
)
@click.option(
    "--shared-instance",
    is_flag=True,
    help="One instance for every session at /mcp, for clients that open a session per call "
    "(the official AWM client); /mcp/i/{id} stays per id. See docs/awm1k.md.",
)
@catalog_option
def serve_command(
    env: str,
    stdio: bool,
    host: str,
    port: int,
    idle_timeout: float,
    max_sessions: int,
    rate_limit: float,
    workers: int | None,
    in_process: bool,
    token: str | None,
    no_auth: bool,
    call_timeout: float,
    shared_instance: bool,
    catalogs: list[Path],
) -> None:
    """Serve ENV over MCP: --stdio, or streamable HTTP at http://HOST:PORT/mcp (one instance per session).

    The shipped catalog runs inside this process by default; any other bundle
    runs in a sandboxed worker (no network, no host files, no API keys) and its
    app.py is never imported here. --workers N sets the number of workers.
    Beyond loopback every request needs the --token (or pass --no-auth). What
    each mode contains: docs/security.md. HTTP clients that cannot keep a
    session name an instance in the path, /mcp/i/{id}, or use --shared-instance.
    """
    import asyncio

    from awm_envs.pool.preflight import trusted
    from awm_envs.runtime.environment import load_environment
    from awm_envs.serve.guard import AuthRequired, resolve_token
    from awm_envs.serve.mcp_server import SHUTDOWN_DEADLINE_S, serve_http, serve_stdio

    try:
        required_token = None if stdio else resolve_token(host, token, no_auth)
    except AuthRequired as exc:
        raise click.UsageError(str(exc)) from None
    # found now; without workers (trusted code) app.py is imported here on first use
    e = load_environment(env, catalog=catalogs)
    if workers is None:
        workers = 0 if trusted(e.path) else 1
    elif workers == 0 and not trusted(e.path) and not in_process:
        raise click.UsageError(
            f"{e.path} is not a bundle of the shipped catalog, so its app.py runs in a sandboxed "
            "worker (the default, --workers 1). To import it into this process instead, where "
            "it can read your files and API keys, add --run-untrusted-code-in-process."
        )
    announce = lambda p: click.echo(  # noqa: E731
        f"serving {e.id} at http://{host}:{p}/mcp (and /mcp/i/{{id}})", err=True
    )

    async def main() -> None:
        factory = None
        pool = None
        tools = None
        if workers == 0 and (e.path / "tools.json").is_file():
            # answer `initialize` and `tools/list` from the bundle's files while app.py (and
            # FastAPI, SQLAlchemy) load in a thread; the first call waits for that load
            tools, factory = _preloading_factory(e)
        if workers > 0:
            from awm_envs.pool.remote import WorkerDied, WorkerPool, WorkerRequestError

            pool = WorkerPool(workers, call_timeout=call_timeout, spare=True)
            try:
                await pool.start()
                tools = await pool.load(e.path)  # imported in a worker, never here
            except (WorkerDied, WorkerRequestError, TimeoutError) as exc:
                await pool.close()
                raise click.ClickException(str(exc)) from None

            async def factory(key: str) -> Any:
                return await pool.create(e.path)

        try:
            if stdio:
                await serve_stdio(e, idle_timeout=idle_timeout, factory=factory, tools=tools)
            else:
                await serve_http(
                    e,
                    host=host,
                    port=port,
                    idle_timeout=idle_timeout,
                    factory=factory,
                    tools=tools,
                    ready=announce,
                    max_sessions=max_sessions,
                    rate_limit=rate_limit,
                    exit_deadline=SHUTDOWN_DEADLINE_S,  # SIGTERM: gone within 2 s
                    shared_instance=shared_instance,
                    token=required_token,
                )
        finally:
            if pool is not None:
                await pool.close()

    if not stdio:
        _check_port(host, port)
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        if stdio:
            raise
        # SIGINT: the server has shut down and the pool is closed; tearing down the interpreter
        # (every session object) would take longer than the shutdown itself
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
