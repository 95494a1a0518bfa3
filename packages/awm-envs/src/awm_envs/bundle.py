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
import hashlib
import importlib.util
import json
import re
import sqlite3
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from awm_core.astparse import parse as parse_source
from awm_core.models import EnvironmentManifest, Task, ToolSpec
from awm_envs.errors import BundleError, BundleProblem
from awm_envs.sqlscript import clock_reads, run_script
from awm_envs.toolspecs import ToolDerivationError, derive_tool_specs

MANIFEST = "manifest.json"
SCHEMA_SQL = "schema.sql"
SEED_SQL = "seed.sql"
APP_PY = "app.py"
TOOLS_JSON = "tools.json"
TASKS_JSON = "tasks.json"
VERIFIERS_PY = "verifiers.py"
REQUIRED_FILES = (MANIFEST, SCHEMA_SQL, SEED_SQL, APP_PY)

_TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_import_lock = threading.Lock()
_app_modules: dict[str, ModuleType] = {}


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

    @property
    def id(self) -> str:
        return self.manifest.id

    def tool(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, or None."""
        for spec in self.tools:
            if spec.name == name:
                return spec
        return None


def _loc(err: dict[str, Any]) -> str:
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
    source = (path / APP_PY).read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_]", "_", env_id)
    name = f"awm_env_{safe}_{digest}"
    with _import_lock:
        module = _app_modules.get(name)
        if module is not None:
            return module
        spec = importlib.util.spec_from_file_location(name, path / APP_PY)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        _app_modules[name] = module
        return module


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


def _verifier_names(path: Path, problems: list[BundleProblem]) -> list[str]:
    file = path / VERIFIERS_PY
    if not file.exists():
        return []
    try:
        tree = parse_source(file.read_text(encoding="utf-8"), filename=VERIFIERS_PY)
    except SyntaxError as exc:
        problems.append(
            BundleProblem(VERIFIERS_PY, f"line {exc.lineno}", f"syntax error: {exc.msg}")
        )
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def load_bundle(path: str | Path) -> Bundle:
    """Load and validate a bundle folder; raise :class:`BundleError` listing every problem."""
    root = Path(path)
    problems: list[BundleProblem] = []
    if not root.is_dir():
        raise BundleError(root, [BundleProblem(str(root), "", "is not a folder")])
    for name in REQUIRED_FILES:
        if not (root / name).is_file():
            problems.append(BundleProblem(name, "", "missing (required in every bundle)"))

    manifest: EnvironmentManifest | None = None
    if (root / MANIFEST).is_file():
        raw = _read_json(root / MANIFEST, problems)
        if raw is not None:
            try:
                manifest = EnvironmentManifest.model_validate(raw)
            except ValidationError as exc:
                problems.extend(_pydantic_problems(MANIFEST, exc))

    template, tables = b"", []
    if (root / SCHEMA_SQL).is_file() and (root / SEED_SQL).is_file():
        try:
            template, tables = compile_template(
                (root / SCHEMA_SQL).read_text(encoding="utf-8"),
                (root / SEED_SQL).read_text(encoding="utf-8"),
                problems,
            )
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(BundleProblem(SCHEMA_SQL, "", f"cannot read SQL: {exc}"))

    module: ModuleType | None = None
    app: FastAPI | None = None
    get_db: Callable[..., Any] | None = None
    if (root / APP_PY).is_file():
        env_id = manifest.id if manifest else root.name
        try:
            module = import_app(root, env_id)
        except BaseException as exc:  # generated code may raise anything, even SystemExit
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append(_import_problem(exc, root / APP_PY))
        if module is not None:
            app = getattr(module, "app", None)
            if not isinstance(app, FastAPI):
                problems.append(
                    BundleProblem(APP_PY, "app", "no module-level `app = FastAPI(...)`")
                )
                app = None
            get_db = getattr(module, "get_db", None)
            if not callable(get_db):
                problems.append(
                    BundleProblem(
                        APP_PY, "get_db", "no module-level `get_db()` dependency yielding a Session"
                    )
                )
                get_db = None
            if app is not None:
                _check_routes(app, problems)

    tools: list[ToolSpec] = []
    route_names: set[str] = set()
    if app is not None:
        route_names = {
            r.operation_id for r in app.routes if isinstance(r, APIRoute) and r.operation_id
        }
        try:
            tools = derive_tool_specs(app)
        except ToolDerivationError as exc:
            problems.append(BundleProblem(APP_PY, "routes", str(exc)))
        except Exception as exc:  # OpenAPI generation fails on unsupported models
            problems.append(BundleProblem(APP_PY, "routes", f"cannot derive tool schemas: {exc}"))
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

    verifier_names = _verifier_names(root, problems)
    tasks: list[Task] = []
    if (root / TASKS_JSON).is_file():
        raw = _read_json(root / TASKS_JSON, problems)
        if raw is not None:
            try:
                tasks = TypeAdapter(list[Task]).validate_python(raw)
            except ValidationError as exc:
                problems.extend(_pydantic_problems(TASKS_JSON, exc, prefix="tasks."))
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

    if problems:
        raise BundleError(root, problems)
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
