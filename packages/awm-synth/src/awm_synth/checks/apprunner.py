"""Import a generated app and call its tools against a private database: the code checks.

This is the pipeline's own small harness so that execution checks do not wait
for anything else: the app is imported from its source under a name unique to
its content, started (its lifespan runs), its tools are derived the way the
awm runtime derives them, and a tool call goes through FastAPI's full request
handling with the app's ``get_db`` dependency overridden by a session on an
in-memory copy of the seed database. The finished bundle is afterwards loaded
by the awm-envs runtime itself (see :mod:`awm_synth.store.bundle`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from awm_core.models import ToolSpec
from awm_core.modules import content_name, import_file
from awm_core.paths import process_scratch
from awm_envs import derive_tool_specs

_lock = threading.Lock()
# One harness at a time per imported app: the dependency override lives on the shared app
# object, so two concurrent checks of the same source (cloned scenarios) would cross databases.
_app_locks: dict[str, threading.Lock] = {}


class AppLoadError(Exception):
    """The app did not import or start; ``message`` names the line of app.py when known."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message


def _where(exc: BaseException, filename: str) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" (app.py line {exc.lineno})"
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).name == filename:
            return f" (app.py line {frame.lineno}: {(frame.line or '').strip()[:100]})"
    return ""


def import_source(source: str, kind: str = "app") -> ModuleType:
    """Import Python ``source`` once per process, keyed by its content hash.

    Generated code may raise anything at import (even ``SystemExit``); that
    becomes an :class:`AppLoadError` naming the line.
    """
    name = content_name("awm_synth", source, kind, digits=20)
    path = process_scratch("awm-synth-apps-") / f"{name}.py"
    if not path.is_file():
        path.write_text(source, encoding="utf-8")
    try:
        return import_file(path, name)
    except BaseException as exc:  # noqa: BLE001 - generated code may raise SystemExit
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise AppLoadError(
            "import_error",
            f"{kind}.py failed to import: {type(exc).__name__}: {exc}{_where(exc, path.name)}",
        ) from exc


@dataclass
class CallOutcome:
    """One tool call: HTTP status, decoded body, and the exception text for crashes."""

    status: int
    content: Any
    crash: str | None = None

    @property
    def ok(self) -> bool:
        return self.status < 400 and self.crash is None


class AppHarness:
    """A started app plus the database image its tools run against."""

    def __init__(self, source: str, template: bytes) -> None:
        self.module = import_source(source, "app")
        app = getattr(self.module, "app", None)
        if not isinstance(app, FastAPI):
            raise AppLoadError("startup_error", "app.py has no module-level `app = FastAPI(...)`")
        get_db = getattr(self.module, "get_db", None)
        if not callable(get_db):
            raise AppLoadError(
                "startup_error",
                "app.py has no module-level `get_db()` dependency yielding a Session",
            )
        self.app = app
        self._filename = Path(self.module.__file__ or "app.py").name
        self.get_db = get_db
        self.template = template
        self.routes = self._routes()
        try:
            self.tools: list[ToolSpec] = derive_tool_specs(app)
        except Exception as exc:
            raise AppLoadError(
                "startup_error", f"list_tools failed: the routes cannot be turned into tools: {exc}"
            ) from exc
        self._conn: sqlite3.Connection | None = None
        self._client: TestClient | None = None
        self._app_lock: threading.Lock | None = None

    def _routes(self) -> dict[str, APIRoute]:
        routes: dict[str, APIRoute] = {}
        for route in self.app.routes:
            if not isinstance(route, APIRoute):
                continue
            op = route.operation_id
            label = f"{','.join(sorted(route.methods or []))} {route.path}"
            if not op:
                raise AppLoadError(
                    "startup_error",
                    f"route {label} has no operation_id; set operation_id='tool_name'",
                )
            if op in routes:
                raise AppLoadError(
                    "startup_error",
                    f"operation_id {op!r} is used by two routes ({label} and {routes[op].path}); tool names must be unique",
                )
            routes[op] = route
        if not routes:
            raise AppLoadError(
                "startup_error", "app.py defines no routes with an operation_id (no tools)"
            )
        return routes

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> AppHarness:
        """Run the app's start-up (lifespan) and bind a fresh database copy."""
        with _lock:
            self._app_lock = _app_locks.setdefault(self.module.__name__, threading.Lock())
        self._app_lock.acquire()
        self.reset()
        client = TestClient(self.app, raise_server_exceptions=True)
        try:
            client.__enter__()
        except BaseException as exc:  # noqa: BLE001
            self._release()
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise AppLoadError(
                "startup_error",
                f"app start-up failed: {type(exc).__name__}: {exc}{_where(exc, self._filename)}",
            ) from exc
        self._client = client
        return self

    def close(self) -> None:
        if self._client is not None:
            # Shutting down a broken app must not mask the results already collected.
            with contextlib.suppress(Exception):
                self._client.__exit__(None, None, None)
            self._client = None
        self.app.dependency_overrides.pop(self.get_db, None)
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._release()

    def _release(self) -> None:
        lock, self._app_lock = self._app_lock, None
        if lock is not None and lock.locked():
            lock.release()

    def __enter__(self) -> AppHarness:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self, image: bytes | None = None) -> None:
        """Point the app at a fresh in-memory copy of ``image`` (default: the seed database)."""
        if self._conn is not None:
            self._conn.close()
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.deserialize(image if image is not None else self.template)
        conn.execute("PRAGMA foreign_keys = ON")
        self._conn = conn
        engine = create_engine("sqlite://", creator=lambda: conn, poolclass=StaticPool)

        def _override() -> Iterator[Session]:
            with Session(engine) as session:
                yield session

        self.app.dependency_overrides[self.get_db] = _override

    def snapshot(self) -> bytes:
        assert self._conn is not None
        return self._conn.serialize()

    # -- calls -----------------------------------------------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        """Call one tool by name with flat arguments, as an agent's ``call_tool`` would."""
        assert self._client is not None, "start() the harness first"
        route = self.routes.get(tool)
        if route is None:
            return CallOutcome(404, {"detail": f"no tool {tool!r}; tools: {sorted(self.routes)}"})
        args = dict(arguments)
        path = route.path
        for param in route.dependant.path_params:
            value = args.pop(param.alias, None)
            path = path.replace("{" + param.alias + "}", str(value))
        query = {
            p.alias: args.pop(p.alias) for p in route.dependant.query_params if p.alias in args
        }
        body: Any = None
        body_params = route.dependant.body_params
        if len(body_params) == 1 and _is_model(body_params[0].field_info.annotation):
            body = args
        elif body_params:
            body = {p.alias: args.get(p.alias) for p in body_params}
        method = sorted(route.methods or {"GET"})[0]
        try:
            response = self._client.request(method, path, params=query, json=body)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            crash = f"{type(exc).__name__}: {exc}{_where(exc, self._filename)}"
            return CallOutcome(500, None, crash=crash)
        try:
            content = response.json()
        except ValueError:
            content = response.text
        return CallOutcome(response.status_code, content)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
