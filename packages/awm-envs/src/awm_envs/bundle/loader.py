"""Load an environment bundle folder, validate all of it, and compile its database image once.

Loading does everything that must not be repeated per instance: the SQL is
executed a single time into an in-memory database whose bytes
(``Connection.serialize()``) become the *template image* every instance is
restored from; ``app.py`` is imported once per process under a module name
unique to the bundle's content, so two bundles (or two versions of one) never
collide in ``sys.modules``.
"""

from __future__ import annotations

import ast
import contextlib
import json
import re
import sqlite3
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from awm_core.astparse import parse as parse_source
from awm_core.models import EnvironmentManifest, Task, ToolSpec
from awm_core.modules import content_name, forget, import_file
from awm_envs.bundle import identity
from awm_envs.bundle.identity import (
    APP_PY,
    MANIFEST,
    REQUIRED_FILES,
    SCHEMA_SQL,
    SEED_SQL,
    TASKS_JSON,
    TOOLS_JSON,
    VERIFIERS_PY,
)
from awm_envs.bundle.sqlscript import clock_reads, run_script
from awm_envs.bundle.toolspecs import ToolDerivationError, derive_tool_specs
from awm_envs.errors import BundleError, BundleProblem

if TYPE_CHECKING:  # FastAPI is imported with app.py, not to read a bundle's files
    from fastapi import FastAPI


_TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Bundle:
    """A validated bundle: manifest, tools, tasks, the imported app and the template image."""

    path: Path
    manifest: EnvironmentManifest
    tools: list[ToolSpec]
    tasks: list[Task]
    template: bytes
    tables: list[str]
    module: ModuleType
    app: FastAPI
    get_db: Callable[..., Any]
    verifier_names: list[str] = field(default_factory=list)
    verifier_source: str | None = None  # the text of verifiers.py; None when it has none

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def digest(self) -> str:
        """The content digest of the bundle's files (:func:`awm_envs.bundle.identity.digest`)."""
        return identity.digest(self.path)

    def tool(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        for spec in self.tools:
            if spec.name == name:
                return spec
        return None


def _loc(err: ErrorDetails) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "(root)"


def _pydantic_problems(file: str, exc: ValidationError, prefix: str = "") -> list[BundleProblem]:
    return [
        BundleProblem(file, f"{prefix}{_loc(e)}", e.get("msg", "invalid")) for e in exc.errors()
    ]


def _read_json(path: Path, problems: list[BundleProblem]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(BundleProblem(path.name, "", f"cannot read: {exc}"))
    except json.JSONDecodeError as exc:
        problems.append(
            BundleProblem(
                path.name, f"line {exc.lineno} column {exc.colno}", f"invalid JSON: {exc.msg}"
            )
        )
    return None


def compile_template(
    schema_sql: str, seed_sql: str, problems: list[BundleProblem] | None = None
) -> tuple[bytes, list[str]]:
    """Execute schema + seed into ``:memory:`` once; return the serialized image and table names.

    Problems (a failing statement, a foreign-key violation, a clock read) are
    appended to ``problems`` when given.
    """
    sink: list[BundleProblem] = problems if problems is not None else []
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        for stmt, err in run_script(conn, schema_sql):
            sink.append(
                BundleProblem(SCHEMA_SQL, f"statement {stmt.index} (line {stmt.line})", err)
            )
        for stmt, err in run_script(conn, seed_sql):
            sink.append(BundleProblem(SEED_SQL, f"statement {stmt.index} (line {stmt.line})", err))
        for stmt, what in clock_reads(seed_sql):
            sink.append(
                BundleProblem(
                    SEED_SQL,
                    f"statement {stmt.index} (line {stmt.line})",
                    f"reads the wall clock ({what}); write literal ISO-8601 times relative "
                    "to manifest.reference_time so the initial state never drifts",
                )
            )
        conn.commit()
        for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check").fetchall()[:20]:
            sink.append(
                BundleProblem(
                    SEED_SQL,
                    f"{table} rowid {rowid}",
                    f"foreign key to {parent} has no matching row",
                )
            )
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        if not tables:
            sink.append(BundleProblem(SCHEMA_SQL, "", "defines no tables"))
        return conn.serialize(), tables
    finally:
        conn.close()


def import_app(path: Path, env_id: str) -> ModuleType:
    """Import ``path/app.py`` once per process under a name unique to its content.

    The name embeds a hash of the source, so reloading an edited bundle gets a
    fresh module while instances of the old one keep working.
    """
    name = content_name("awm_env", (path / APP_PY).read_bytes(), env_id)
    return import_file(path / APP_PY, name)


def _import_problem(exc: BaseException, app_path: Path) -> BundleProblem:
    """Name the line of app.py where the import failed, not the runtime's frames."""
    where = ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        where = f"line {exc.lineno}"
    else:
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if (
                Path(frame.filename).name == APP_PY
                and Path(frame.filename).resolve() == app_path.resolve()
            ):
                where = f"line {frame.lineno}"
                break
    return BundleProblem(APP_PY, where or "import", f"import failed: {type(exc).__name__}: {exc}")


def _check_routes(app: FastAPI, problems: list[BundleProblem]) -> None:
    from fastapi.routing import APIRoute

    seen: dict[str, str] = {}
    for route in app.routes:
        if not isinstance(route, APIRoute):
            continue
        label = f"route {','.join(sorted(route.methods or []))} {route.path}"
        op = route.operation_id
        if not op:
            problems.append(
                BundleProblem(
                    APP_PY,
                    label,
                    "has no operation_id; set operation_id='<tool_name>' on the decorator",
                )
            )
            continue
        if not _TOOL_NAME_RE.match(op):
            problems.append(
                BundleProblem(APP_PY, label, f"operation_id {op!r} is not a valid tool name")
            )
        if op in seen:
            problems.append(
                BundleProblem(APP_PY, label, f"operation_id {op!r} is also used by {seen[op]}")
            )
        seen[op] = label


def _verifier_source(path: Path, problems: list[BundleProblem]) -> str | None:
    file = path / VERIFIERS_PY
    if not file.exists():
        return None
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(BundleProblem(VERIFIERS_PY, "", f"cannot read: {exc}"))
        return None


def _verifier_names(source: str | None, problems: list[BundleProblem]) -> list[str]:
    if source is None:
        return []
    try:
        tree = parse_source(source, filename=VERIFIERS_PY)
    except SyntaxError as exc:
        problems.append(
            BundleProblem(VERIFIERS_PY, f"line {exc.lineno}", f"syntax error: {exc.msg}")
        )
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def _missing_files(root: Path, problems: list[BundleProblem]) -> None:
    for name in REQUIRED_FILES:
        if not (root / name).is_file():
            problems.append(BundleProblem(name, "", "missing (required in every bundle)"))


def _load_manifest(root: Path, problems: list[BundleProblem]) -> EnvironmentManifest | None:
    if not (root / MANIFEST).is_file():
        return None
    raw = _read_json(root / MANIFEST, problems)
    if raw is None:
        return None
    try:
        return EnvironmentManifest.model_validate(raw)
    except ValidationError as exc:
        problems.extend(_pydantic_problems(MANIFEST, exc))
        return None


def _load_template(root: Path, problems: list[BundleProblem]) -> tuple[bytes, list[str]]:
    """The compiled database image and its tables; empty when the SQL is missing or unreadable."""
    if not ((root / SCHEMA_SQL).is_file() and (root / SEED_SQL).is_file()):
        return b"", []
    try:
        return compile_template(
            (root / SCHEMA_SQL).read_text(encoding="utf-8"),
            (root / SEED_SQL).read_text(encoding="utf-8"),
            problems,
        )
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(BundleProblem(SCHEMA_SQL, "", f"cannot read SQL: {exc}"))
        return b"", []


@dataclass
class _LoadedApp:
    module: ModuleType | None = None
    app: FastAPI | None = None
    get_db: Callable[..., Any] | None = None


def _load_app(root: Path, env_id: str, problems: list[BundleProblem]) -> _LoadedApp:
    """Import app.py and check its module-level ``app``, ``get_db`` and routes."""
    loaded = _LoadedApp()
    if not (root / APP_PY).is_file():
        return loaded
    try:
        loaded.module = import_app(root, env_id)
    except BaseException as exc:  # generated code may raise anything, even SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        problems.append(_import_problem(exc, root / APP_PY))
        return loaded
    from fastapi import FastAPI

    app = getattr(loaded.module, "app", None)
    if isinstance(app, FastAPI):
        loaded.app = app
    else:
        problems.append(BundleProblem(APP_PY, "app", "no module-level `app = FastAPI(...)`"))
    get_db = getattr(loaded.module, "get_db", None)
    if callable(get_db):
        loaded.get_db = get_db
    else:
        problems.append(
            BundleProblem(
                APP_PY, "get_db", "no module-level `get_db()` dependency yielding a Session"
            )
        )
    if loaded.app is not None:
        _check_routes(loaded.app, problems)
    return loaded


def _derived_tools(app: FastAPI, problems: list[BundleProblem]) -> list[ToolSpec]:
    try:
        return derive_tool_specs(app)
    except ToolDerivationError as exc:
        problems.append(BundleProblem(APP_PY, "routes", str(exc)))
    except Exception as exc:  # OpenAPI generation fails on unsupported models
        problems.append(BundleProblem(APP_PY, "routes", f"cannot derive tool schemas: {exc}"))
    return []


def _load_tools(root: Path, app: FastAPI | None, problems: list[BundleProblem]) -> list[ToolSpec]:
    """The tools derived from the app's routes, or tools.json's (checked against the routes)."""
    from fastapi.routing import APIRoute

    tools: list[ToolSpec] = []
    route_names: set[str] = set()
    if app is not None:
        route_names = {
            r.operation_id for r in app.routes if isinstance(r, APIRoute) and r.operation_id
        }
        tools = _derived_tools(app, problems)
    if (root / TOOLS_JSON).is_file():
        raw = _read_json(root / TOOLS_JSON, problems)
        if raw is not None:
            try:
                tools = TypeAdapter(list[ToolSpec]).validate_python(raw)
            except ValidationError as exc:
                problems.extend(_pydantic_problems(TOOLS_JSON, exc, prefix="tools."))
                tools = []
            for i, spec in enumerate(tools):
                if app is not None and spec.name not in route_names:
                    problems.append(
                        BundleProblem(
                            TOOLS_JSON,
                            f"tools.{i}.name",
                            f"{spec.name!r} matches no route's operation_id in app.py",
                        )
                    )
    if app is not None and not tools and not any(p.file == APP_PY for p in problems):
        problems.append(
            BundleProblem(APP_PY, "routes", "defines no tools (no routes with an operation_id)")
        )
    return tools


def _check_tasks(
    tasks: list[Task],
    tools: list[ToolSpec],
    verifier_names: list[str],
    problems: list[BundleProblem],
) -> None:
    """Unique ids, reference solutions that call known tools, verifiers that exist."""
    tool_names = {t.name for t in tools}
    seen_ids: set[str] = set()
    for i, task in enumerate(tasks):
        if task.id in seen_ids:
            problems.append(
                BundleProblem(TASKS_JSON, f"tasks.{i}.id", f"duplicate task id {task.id!r}")
            )
        seen_ids.add(task.id)
        for j, step in enumerate(task.reference_solution or []):
            if tool_names and step.tool not in tool_names:
                problems.append(
                    BundleProblem(
                        TASKS_JSON,
                        f"tasks.{i}.reference_solution.{j}.tool",
                        f"unknown tool {step.tool!r}; tools: {', '.join(sorted(tool_names))}",
                    )
                )
        if task.verifier and task.verifier not in verifier_names:
            problems.append(
                BundleProblem(
                    TASKS_JSON,
                    f"tasks.{i}.verifier",
                    f"{task.verifier!r} is not a function in {VERIFIERS_PY}",
                )
            )


def _load_tasks(
    root: Path,
    tools: list[ToolSpec],
    verifier_names: list[str],
    problems: list[BundleProblem],
) -> list[Task]:
    tasks: list[Task] = []
    if not (root / TASKS_JSON).is_file():
        return tasks
    raw = _read_json(root / TASKS_JSON, problems)
    if raw is not None:
        try:
            tasks = TypeAdapter(list[Task]).validate_python(raw)
        except ValidationError as exc:
            problems.extend(_pydantic_problems(TASKS_JSON, exc, prefix="tasks."))
    _check_tasks(tasks, tools, verifier_names, problems)
    return tasks


def load_bundle(path: str | Path) -> Bundle:
    """Load and validate a bundle folder; raise :class:`BundleError` listing every problem."""
    root = Path(path)
    problems: list[BundleProblem] = []
    if not root.is_dir():
        raise BundleError(root, [BundleProblem(str(root), "", "is not a folder")])
    _missing_files(root, problems)
    manifest = _load_manifest(root, problems)
    template, tables = _load_template(root, problems)
    loaded = _load_app(root, manifest.id if manifest else root.name, problems)
    tools = _load_tools(root, loaded.app, problems)
    verifier_source = _verifier_source(root, problems)
    verifier_names = _verifier_names(verifier_source, problems)
    tasks = _load_tasks(root, tools, verifier_names, problems)

    if problems:
        raise BundleError(root, problems)
    module, app, get_db = loaded.module, loaded.app, loaded.get_db
    assert manifest is not None and module is not None and app is not None and get_db is not None
    return Bundle(
        path=root.resolve(),
        manifest=manifest,
        tools=tools,
        tasks=tasks,
        template=template,
        tables=tables,
        module=module,
        app=app,
        get_db=get_db,
        verifier_names=verifier_names,
        verifier_source=verifier_source,
    )


def bundle_layout_schema() -> dict[str, Any]:
    """A JSON Schema of a whole bundle as one JSON document (file name -> content).

    Useful to ship or generate bundles as a single JSON object (synthesis
    output, an HTTP upload); ``awm schema`` holds the schemas of the parts.
    """
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:awm:schema:environment-bundle:v1",
        "title": "awm environment bundle (format_version 1)",
        "type": "object",
        "required": [MANIFEST, SCHEMA_SQL, SEED_SQL, APP_PY],
        "additionalProperties": False,
        "properties": {
            MANIFEST: {"$ref": "urn:awm:schema:manifest:v1"},
            SCHEMA_SQL: {
                "type": "string",
                "description": "SQLite DDL: CREATE TABLE / CREATE INDEX.",
            },
            SEED_SQL: {
                "type": "string",
                "description": "Deterministic INSERTs in foreign-key order.",
            },
            APP_PY: {
                "type": "string",
                "description": "Python source: module-level `app` and `get_db`.",
            },
            TOOLS_JSON: {"type": "array", "items": {"$ref": "urn:awm:schema:tool-spec:v1"}},
            TASKS_JSON: {"type": "array", "items": {"$ref": "urn:awm:schema:task:v1"}},
            VERIFIERS_PY: {
                "type": "string",
                "description": "Python source: one function per task verifier.",
            },
        },
    }


def unload_bundle(bundle: Bundle) -> None:
    """Let this process forget ``bundle``'s imported ``app.py`` (see :func:`awm_core.modules.forget`).

    For processes that load many bundles once each (an import worker, a validation run):
    the module, its app and its models go once nothing else holds them.
    """
    forget(bundle.module.__name__)
    _clear_fastapi_caches()


def _clear_fastapi_caches() -> None:
    """Empty FastAPI's classification caches of endpoint functions.

    Why: ``fastapi.dependencies.models`` keeps ``functools.lru_cache`` tables (4,096
    entries each) keyed by the endpoint functions themselves, so every app ever loaded
    stays reachable through its functions until the tables overflow: about 1.7 MiB per
    unloaded bundle here. They only memoise whether a callable is a generator or a
    coroutine, so emptying them costs a recomputation. Private to FastAPI: whatever it
    names them, only objects with ``cache_clear`` are touched, and nothing fails if
    there are none.
    """
    import fastapi.dependencies.models as models

    for name in dir(models):
        clear = getattr(getattr(models, name, None), "cache_clear", None)
        if callable(clear):
            with contextlib.suppress(Exception):
                clear()
