"""Run one tool call through FastAPI's own machinery, in-process, without HTTP.

Two ways to run a route, chosen once per route when the environment loads:

``DirectPlan`` (the fast path, used for ordinary routes)
    Walks the route's ``Dependant`` tree ourselves and uses FastAPI's own
    parameter and body validation (``request_params_to_args``,
    ``request_body_to_args``) and response serialisation
    (``serialize_response``), so validation, dependency injection and
    response models behave as under uvicorn. Sync endpoints and sync
    (generator) dependencies are called inline instead of through the
    threadpool: the call is a few hundred microseconds of SQLite work on the
    instance's own connection, and the thread hop alone would double it.
``AsgiPlan`` (the fallback)
    Routes that need the ``Request``/``Response`` objects, security
    dependencies or included routers are driven as a complete ASGI request
    through ``app(scope, receive, send)``: slower, but nothing is unsupported.

Both bind the calling instance's SQLAlchemy session through a ContextVar read
by the override of the app's ``get_db`` dependency.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import (
    get_dependant,
    request_body_to_args,
    request_params_to_args,
)
from fastapi.exceptions import RequestValidationError, ResponseValidationError
from fastapi.routing import APIRoute, serialize_response
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import Response

SESSION: ContextVar[Session] = ContextVar("awm_instance_session")
_NO_HEADERS = Headers()
_SPECIAL = (
    "request_param_name",
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)

ERROR_TYPES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    422: "invalid_arguments",
    429: "rate_limited",
}


def bound_session() -> Session:
    """The override of the app's ``get_db``: the calling instance's session.

    Raises a clear error when the app is used outside an awm instance call.
    """
    try:
        return SESSION.get()
    except LookupError:
        raise RuntimeError(
            "get_db() was called outside an awm instance call; under the awm runtime the "
            "database is bound per instance (use env.instance().call_tool(...))"
        ) from None


def error_type_for(status: int) -> str:
    """Map an HTTP status to the ``ToolResult.error_type`` the agent loop sees."""
    if status in ERROR_TYPES:
        return ERROR_TYPES[status]
    return "client_error" if status < 500 else "tool_error"


class ToolFailure(Exception):
    """A tool call that failed; ``message`` is written for the agent."""

    def __init__(self, status: int, message: str, error_type: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or error_type_for(status)


def _describe_validation(errors: Any) -> str:
    parts = []
    for err in list(errors)[:8]:
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(loc) or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid arguments"


def _detail_text(detail: Any) -> str:
    return detail if isinstance(detail, str) else json.dumps(detail, default=str)


def classify(tool: str, exc: BaseException) -> ToolFailure:
    """Turn whatever a tool raised into a :class:`ToolFailure` the agent can act on."""
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, MemoryError):
        return ToolFailure(
            500,
            f"{tool} ran out of memory (the worker's memory limit); the call was rolled back",
            "environment_error",
        )
    if isinstance(exc, HTTPException):
        return ToolFailure(exc.status_code, _detail_text(exc.detail))
    if isinstance(exc, RequestValidationError):
        return ToolFailure(
            422, f"invalid arguments for {tool}: {_describe_validation(exc.errors())}"
        )
    if isinstance(exc, ResponseValidationError):
        return ToolFailure(
            500,
            f"{tool} produced a response that does not match its declared response model "
            f"({_describe_validation(exc.errors())}); this is a bug in the environment",
            "tool_error",
        )
    if isinstance(exc, sa_exc.IntegrityError | sqlite3.IntegrityError):
        orig = getattr(exc, "orig", exc)
        return ToolFailure(409, f"{tool} was rejected by a database constraint: {orig}", "conflict")
    if isinstance(exc, sa_exc.SQLAlchemyError | sqlite3.Error):
        orig = getattr(exc, "orig", None) or exc
        return ToolFailure(500, f"{tool} failed with a database error: {orig}", "tool_error")
    return ToolFailure(500, f"{tool} failed: {type(exc).__name__}: {exc}", "tool_error")


@dataclass
class _Node:
    """One dependency (or the endpoint) with overrides already applied."""

    call: Callable[..., Any]
    name: str | None
    kind: str  # "sync" | "gen" | "async" | "agen"
    dependant: Dependant
    children: list[_Node] = field(default_factory=list)
    use_cache: bool = True


def _kind(call: Callable[..., Any]) -> str:
    import inspect

    target = call
    if not (inspect.isfunction(call) or inspect.ismethod(call)) and callable(call):
        target = type(call).__call__  # a callable instance used as a dependency
    if inspect.isasyncgenfunction(target):
        return "agen"
    if inspect.isgeneratorfunction(target):
        return "gen"
    if inspect.iscoroutinefunction(target):
        return "async"
    return "sync"


class Unsupported(Exception):
    """The direct path cannot run this route; the ASGI path will."""


def _build_node(dependant: Dependant, overrides: Mapping[Any, Any], is_root: bool = False) -> _Node:
    for attr in _SPECIAL:
        if getattr(dependant, attr, None):
            raise Unsupported(attr)
    if dependant.own_oauth_scopes:
        raise Unsupported("security scopes")
    children = []
    for sub in dependant.dependencies:
        assert sub.call is not None
        call = overrides.get(sub.call, sub.call)
        use = sub
        if call is not sub.call:
            use = get_dependant(path=sub.path or "", call=call, name=sub.name)
        node = _build_node(use, overrides)
        node.name = sub.name
        node.use_cache = sub.use_cache
        children.append(node)
    assert dependant.call is not None
    return _Node(dependant.call, dependant.name, _kind(dependant.call), dependant, children)


def _param_names(node: _Node, out: set[str]) -> set[str]:
    for f in (*node.dependant.path_params, *node.dependant.query_params):
        out.add(f.alias)
        out.add(f.name)
    for child in node.children:
        _param_names(child, out)
    return out


def _suspends(node: _Node) -> bool:
    return node.kind in ("async", "agen") or any(_suspends(c) for c in node.children)


class DirectPlan:
    """Run a route by solving its dependency tree ourselves (see module docstring)."""

    def __init__(self, name: str, route: APIRoute, overrides: Mapping[Any, Any]) -> None:
        self.name = name
        self.route = route
        self.root = _build_node(route.dependant, overrides, is_root=True)
        self.param_names = frozenset(_param_names(self.root, set()))
        self.embed = bool(getattr(route, "_embed_body_fields", False))
        self.may_suspend = _suspends(self.root)
        # Set by Instance.call_tool once its calls take longer than OFFLOAD_AFTER_S (recent_s,
        # a moving average of their latency): from then on the async form runs this (sync)
        # route in a thread, as uvicorn would, so one slow tool no longer stalls the event
        # loop (and every other session of an MCP server).
        self.offload = False
        self.recent_s = 0.0

    async def _solve(
        self,
        node: _Node,
        args: Mapping[str, Any],
        body: dict[str, Any],
        stack: AsyncExitStack,
        cache: dict[Any, Any],
    ) -> tuple[dict[str, Any], list[Any]]:
        values: dict[str, Any] = {}
        errors: list[Any] = []
        for child in node.children:
            sub_values, sub_errors = await self._solve(child, args, body, stack, cache)
            if sub_errors:
                errors.extend(sub_errors)
                continue
            if child.use_cache and child.call in cache:
                value = cache[child.call]
            elif child.kind == "gen":
                value = stack.enter_context(contextmanager(child.call)(**sub_values))
            elif child.kind == "agen":
                value = await stack.enter_async_context(
                    asynccontextmanager(child.call)(**sub_values)
                )
            elif child.kind == "async":
                value = await child.call(**sub_values)
            else:
                value = child.call(**sub_values)
            cache.setdefault(child.call, value)
            if child.name is not None:
                values[child.name] = value
        dep = node.dependant
        for fields, source in (
            (dep.path_params, args),
            (dep.query_params, args),
            (dep.header_params, _NO_HEADERS),
            (dep.cookie_params, {}),
        ):
            if fields:
                found, errs = request_params_to_args(fields, source)
                values.update(found)
                errors.extend(errs)
        if dep.body_params:
            found, errs = await request_body_to_args(
                body_fields=dep.body_params, received_body=body, embed_body_fields=self.embed
            )
            values.update(found)
            errors.extend(errs)
        return values, errors

    async def run(self, args: Mapping[str, Any]) -> Any:
        """Validate, inject, call the endpoint and serialise its response; raise on failure."""
        body = {k: v for k, v in args.items() if k not in self.param_names}
        route = self.route
        async with AsyncExitStack() as stack:
            values, errors = await self._solve(self.root, args, body, stack, {})
            if errors:
                raise RequestValidationError(errors)
            if self.root.kind == "async":
                raw = await self.root.call(**values)
            else:
                raw = self.root.call(**values)
            if isinstance(raw, Response):
                return _response_payload(self.name, raw.status_code, bytes(raw.body))
            return await serialize_response(
                field=route.response_field,
                response_content=raw,
                include=route.response_model_include,
                exclude=route.response_model_exclude,
                by_alias=route.response_model_by_alias,
                exclude_unset=route.response_model_exclude_unset,
                exclude_defaults=route.response_model_exclude_defaults,
                exclude_none=route.response_model_exclude_none,
                is_coroutine=True,
            )


def _response_payload(tool: str, status: int, body: bytes) -> Any:
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        payload = body.decode("utf-8", "replace")
    if status >= 400:
        detail = payload.get("detail", payload) if isinstance(payload, dict) else payload
        raise ToolFailure(status, _detail_text(detail))
    return payload


@dataclass
class AsgiPlan:
    """Run a route as a full in-memory ASGI request (the fallback; see module docstring)."""

    name: str
    app: FastAPI
    method: str
    path: str
    path_params: frozenset[str]
    query_params: frozenset[str]
    may_suspend: bool = True
    offload: bool = False  # never set: ASGI runs sync endpoints in its own threadpool
    recent_s: float = 0.0

    async def run(self, args: Mapping[str, Any]) -> Any:
        path = self.path
        for key in self.path_params:
            if key in args:
                value = args[key]
                text = json.dumps(value) if isinstance(value, bool) else str(value)
                for pattern in (f"{{{key}}}", f"{{{key}:path}}"):
                    path = path.replace(pattern, quote(text, safe=""))
        query = []
        for key in self.query_params:
            if key in args:
                values = args[key] if isinstance(args[key], list) else [args[key]]
                for v in values:
                    query.append((key, json.dumps(v) if isinstance(v, bool | dict) else str(v)))
        body_args = {
            k: v
            for k, v in args.items()
            if k not in self.path_params and k not in self.query_params
        }
        body = (
            json.dumps(body_args).encode()
            if self.method not in ("GET", "HEAD", "DELETE") or body_args
            else b""
        )
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "root_path": "",
            "query_string": urlencode(query).encode(),
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            "client": ("awm", 0),
            "server": ("awm", 80),
            "state": {},
        }
        sent = False
        status = 500
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # ServerErrorMiddleware re-raises after sending its 500
            raise classify(self.name, exc) from exc
        return _response_payload(self.name, status, b"".join(chunks))


Plan = DirectPlan | AsgiPlan


def build_plans(
    app: FastAPI,
    tool_names: list[str],
    bindings: Mapping[str, tuple[str, str, frozenset[str], frozenset[str]]],
) -> dict[str, Plan]:
    """A plan per tool: direct where possible, ASGI otherwise."""
    plans: dict[str, Plan] = {}
    overrides = app.dependency_overrides
    routes = {r.operation_id: r for r in app.routes if isinstance(r, APIRoute) and r.operation_id}
    for name in tool_names:
        route = routes.get(name)
        if route is not None:
            try:
                plans[name] = DirectPlan(name, route, overrides)
                continue
            except Unsupported:
                pass
        if name in bindings:
            method, path, path_params, query_params = bindings[name]
            plans[name] = AsgiPlan(name, app, method, path, path_params, query_params)
    return plans
