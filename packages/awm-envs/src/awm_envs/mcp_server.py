"""Serve an environment over the Model Context Protocol with the official ``mcp`` SDK.

One isolated instance per MCP session: over stdio the process serves one
client, so one instance; over streamable HTTP every session (its
``mcp-session-id``) gets its own instance, and ``/mcp/i/{instance_id}`` lets a
trainer address many explicit instances behind one server (needed by
sessionless clients, and handy for ``instance_id = rollout id``). Instances
idle longer than ``idle_timeout`` are closed by a reaper task: clients that
vanish without closing their session do not leak databases.

The SDK does not validate arguments against ``input_schema``; the instance
does (see :mod:`awm_envs.argcheck`), and every failure comes back as
``is_error`` content with a message the agent can act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from awm_core.models import ToolResult, ToolSpec
from awm_envs.environment import Environment

INSTANCE_SCOPE_KEY = "awm.instance_id"
DEFAULT_IDLE_TIMEOUT_S = 1800.0


@dataclass
class _Entry:
    instance: Any
    last_used: float


class InstanceDirectory:
    """Instances by key (session id, explicit id, ``stdio``), created on first use, reaped when idle."""

    def __init__(self, factory: Callable[[str], Awaitable[Any]], idle_timeout: float) -> None:
        self._factory = factory
        self.idle_timeout = idle_timeout
        self._entries: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.created = 0
        self.reaped = 0

    async def get(self, key: str) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            lock = self._locks.setdefault(key, asyncio.Lock())
            async with lock:
                entry = self._entries.get(key)
                if entry is None:
                    entry = _Entry(await self._factory(key), time.monotonic())
                    self._entries[key] = entry
                    self.created += 1
        entry.last_used = time.monotonic()
        return entry.instance

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    async def close(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        self._locks.pop(key, None)
        if entry is not None:
            result = entry.instance.close()
            if inspect.isawaitable(result):
                await result

    async def reap_once(self) -> int:
        """Close instances idle longer than ``idle_timeout``; return how many."""
        now = time.monotonic()
        stale = [k for k, e in self._entries.items() if now - e.last_used > self.idle_timeout]
        for key in stale:
            await self.close(key)
        self.reaped += len(stale)
        return len(stale)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            await self.reap_once()

    async def close_all(self) -> None:
        for key in list(self._entries):
            await self.close(key)


def to_mcp_tool(spec: ToolSpec) -> types.Tool:
    """An awm ToolSpec as an MCP Tool (the input schema is passed through unchanged)."""
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema)


def to_mcp_result(result: ToolResult) -> types.CallToolResult:
    """Success: the JSON payload as text plus ``structured_content``; failure: the message, ``is_error``."""
    if result.is_error:
        text = f"[{result.error_type}] {result.content}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=True,
            meta={"awm/error_type": result.error_type},
        )
    payload = result.content
    text = (
        payload
        if isinstance(payload, str)
        else json.dumps(payload, ensure_ascii=False, default=str)
    )
    structured = payload if isinstance(payload, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=False,
    )


async def call_tool_for(
    directory: InstanceDirectory, key: str, params: types.CallToolRequestParams
) -> types.CallToolResult:
    """Run one ``tools/call`` on the instance behind ``key`` (the SDK handler and the fast path share it)."""
    try:
        instance = await directory.get(key)
        result = await instance.call_tool(params.name, params.arguments or {})
    except Exception as exc:  # the instance could not even be created
        result = ToolResult(
            content=f"environment unavailable: {exc}",
            is_error=True,
            error_type="environment_error",
        )
    if key.startswith("r:"):
        await directory.close(key)
    return to_mcp_result(result)


def _key_for(ctx: Any) -> str:
    request = getattr(ctx, "request", None)
    if request is None:
        return "stdio"
    scope = getattr(request, "scope", {})
    explicit = scope.get(INSTANCE_SCOPE_KEY)
    if explicit:
        return f"i:{explicit}"
    session_id = request.headers.get("mcp-session-id")
    if session_id:
        return f"s:{session_id}"
    # A sessionless (stateless-era) request without an explicit instance: there is no
    # identity to keep state under, so it gets a fresh instance that lives for this request.
    return f"r:{id(request)}"


def build_server(
    env: Environment,
    *,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
) -> tuple[Server[Any], InstanceDirectory]:
    """A low-level MCP server for ``env`` and the directory of its instances.

    ``factory(key)`` makes an instance for a new session (default: an
    in-process instance; pass one that uses a :class:`~awm_envs.workers.WorkerPool`
    to sandbox the tool code).
    """

    async def _default_factory(key: str) -> Any:
        return env.instance()

    directory = InstanceDirectory(factory or _default_factory, idle_timeout)
    tools = [to_mcp_tool(t) for t in env.tools]

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool_for(directory, _key_for(ctx), params)

    server: Server[Any] = Server(
        f"awm-{env.id}",
        version=env.bundle.manifest.version,
        instructions=env.bundle.manifest.description,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return server, directory


async def serve_stdio(env: Environment, *, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S) -> None:
    """Serve one client over stdin/stdout until it disconnects."""
    from mcp.server.stdio import stdio_server

    server, directory = build_server(env, idle_timeout=idle_timeout)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await directory.close_all()


class _InstancePathRouter:
    """ASGI wrapper in front of the SDK's app.

    ``/mcp/i/{id}`` is served as ``/mcp`` with the id remembered in the scope.
    On ``/mcp`` itself, state lives in the session, so a sessionless
    (2026-era) request is answered "method not found": the official client's
    ``auto`` mode then falls back to the session handshake and gets its own
    instance, instead of silently losing state between calls.
    """

    def __init__(
        self,
        app: Any,
        path: str,
        directory: InstanceDirectory | None = None,
        fast: _FastToolCalls | None = None,
    ) -> None:
        self.app = app
        self.directory = directory
        self.fast = fast
        self.prefix = path.rstrip("/") + "/i/"
        self.path = path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(self.prefix):
            instance_id = scope["path"][len(self.prefix) :].strip("/")
            if instance_id and "/" not in instance_id:
                scope = dict(scope)
                scope[INSTANCE_SCOPE_KEY] = instance_id
                scope["path"] = self.path
                scope["raw_path"] = self.path.encode()
        elif scope["type"] == "http" and scope["path"] == self.path and scope["method"] == "POST":
            version = next(
                (v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-protocol-version"),
                None,
            )
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                await self._refuse_sessionless(receive, send)
                return
        if (
            self.fast is not None
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == self.path
        ):
            receive = await self.fast.handle(scope, receive, send)
            if receive is None:
                return
        await self.app(scope, receive, send)
        if (
            scope["type"] == "http"
            and scope.get("method") == "DELETE"
            and self.directory is not None
        ):
            # the client closed its session: free its instance now rather than at the idle timeout
            session_id = next(
                (v.decode("latin-1") for k, v in scope["headers"] if k == b"mcp-session-id"), None
            )
            if session_id:
                await self.directory.close(f"s:{session_id}")

    async def _refuse_sessionless(self, receive: Any, send: Any) -> None:
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        try:
            request_id = json.loads(b"".join(chunks)).get("id")
        except (ValueError, AttributeError):
            request_id = None
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": -32601,
                    "message": f"{self.path} keeps one instance per session: use the session handshake, "
                    f"or {self.prefix}{{instance_id}} for sessionless requests",
                },
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


_FAST_MAX_BODY = 1 << 20


class _FastToolCalls:
    """The hot path: ``tools/call`` on an established session, without the SDK's per-request machinery.

    Profiling 64 sessions showed the SDK spending about three times the tool's
    own time per call: a Starlette middleware stack, a memory-stream hop into
    the session's task, a JSON-RPC dispatcher task per request, pydantic
    round trips and a second stream hop back. This path answers the one
    request a rollout makes thousands of times, a well-formed ``tools/call``
    on a session the SDK has already opened (``initialize`` went through the
    SDK), with the same checks: a live session known to the SDK's session
    manager, the same Host/Origin/Content-Type validation, ``Accept``, a
    handshake-era protocol version, ``CallToolRequestParams`` validation and
    the SDK's per-version result serialisation. Anything else (initialize,
    notifications, GET, DELETE, batches, malformed or unusual requests,
    authenticated sessions) is replayed unchanged to the SDK, which owns
    every error answer. If the SDK's internals this relies on are missing
    (another SDK version), it switches itself off and everything goes to
    the SDK.
    """

    def __init__(
        self, server: Server[Any], directory: InstanceDirectory, idle_timeout: float
    ) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.directory = directory
        self.idle_timeout = idle_timeout
        manager = getattr(server, "_session_manager", None)
        self._sessions: dict[str, Any] | None = getattr(manager, "_server_instances", None)
        self._owners: dict[str, Any] = getattr(manager, "_session_owners", {})
        self._security = TransportSecurityMiddleware(getattr(manager, "security_settings", None))
        self.enabled = isinstance(self._sessions, dict)
        self.served = 0

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        """Answer the request and return ``None``, or return the ``receive`` to hand the SDK."""
        if not self.enabled or scope.get("user") is not None:
            return receive
        headers = {k: v for k, v in scope["headers"]}
        session_id = headers.get(b"mcp-session-id", b"").decode("latin-1")
        transport = self._sessions.get(session_id) if self._sessions is not None else None
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if (
            transport is None
            or getattr(transport, "is_terminated", True)
            or self._owners.get(session_id) is not None
            or version not in HANDSHAKE_PROTOCOL_VERSIONS
            or b"application/json" not in headers.get(b"accept", b"")
            and b"*/*" not in headers.get(b"accept", b"")
        ):
            return receive
        try:
            length = int(headers.get(b"content-length", b"-1"))
        except ValueError:
            return receive
        if not 0 <= length <= _FAST_MAX_BODY:
            return receive
        from starlette.requests import Request

        if await self._security.validate_request(Request(scope), is_post=True) is not None:
            return receive
        body, more, disconnected = await self._read_body(receive)
        replay = _replaying(body, more, disconnected, receive)
        if more or disconnected:
            return replay
        try:
            message = json.loads(body)
            params = self._params(message)
        except (ValueError, TypeError, AttributeError):
            return replay
        if params is None:
            return replay
        key = (
            f"i:{scope[INSTANCE_SCOPE_KEY]}" if scope.get(INSTANCE_SCOPE_KEY) else f"s:{session_id}"
        )
        with self._holding(transport):
            result = await call_tool_for(self.directory, key, params)
            dumped = serialize_server_result(
                "tools/call",
                version,
                result.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
        payload = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": dumped},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        self.served += 1
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"mcp-session-id", session_id.encode("latin-1")),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
        return None

    @staticmethod
    def _params(message: Any) -> types.CallToolRequestParams | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        if message.get("method") != "tools/call" or not isinstance(message.get("params"), dict):
            return None
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return None
        try:
            return types.CallToolRequestParams.model_validate(message["params"], by_name=False)
        except ValueError:
            return None

    @staticmethod
    async def _read_body(receive: Any) -> tuple[bytes, bool, bool]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"".join(chunks), False, True
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if not message.get("more_body"):
                return b"".join(chunks), False, False
            if size > _FAST_MAX_BODY:
                return b"".join(chunks), True, False

    @contextlib.contextmanager
    def _holding(self, transport: Any) -> Any:
        """Keep the SDK's session alive while (and for ``idle_timeout`` after) a fast call.

        The SDK ends a session whose transport saw no request for its idle
        timeout; calls answered here never reach the transport, so its idle
        deadline is pushed out exactly as its own request handling would.
        """
        scope = getattr(transport, "idle_scope", None)
        if scope is not None:
            scope.deadline = math.inf
        try:
            yield
        finally:
            if scope is not None and not getattr(transport, "_requests_in_flight", 0):
                scope.deadline = anyio.current_time() + self.idle_timeout


def _replaying(body: bytes, more: bool, disconnected: bool, receive: Any) -> Any:
    """A ``receive`` that yields the already-read body first, then the original stream."""
    pending: list[dict[str, Any]] = [
        {"type": "http.disconnect"}
        if disconnected and not body
        else {"type": "http.request", "body": body, "more_body": more}
    ]

    async def replay() -> dict[str, Any]:
        if pending:
            return pending.pop()
        return await receive()  # type: ignore[no-any-return]

    return replay


def build_http_app(
    env: Environment,
    *,
    host: str = "127.0.0.1",
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    max_sessions: int | None = 10_000,
    fast_path: bool = True,
) -> tuple[Any, InstanceDirectory]:
    """The streamable-HTTP ASGI app (``/mcp`` and ``/mcp/i/{id}``) and its instance directory.

    ``fast_path=False`` sends every request through the SDK (the reference
    behaviour the fast path is tested against).
    """
    server, directory = build_server(env, idle_timeout=idle_timeout, factory=factory)
    starlette_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        json_response=True,  # one JSON body per request: cheaper than an SSE stream per call
        session_idle_timeout=idle_timeout,
        max_sessions=max_sessions,
    )
    inner_lifespan = starlette_app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):  # type: ignore[no-untyped-def]
        async with inner_lifespan(app) as state:
            reaper = asyncio.create_task(directory.reap_forever())
            try:
                yield state
            finally:
                reaper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reaper
                await directory.close_all()

    starlette_app.router.lifespan_context = lifespan
    fast = _FastToolCalls(server, directory, idle_timeout) if fast_path else None
    return _InstancePathRouter(starlette_app, "/mcp", directory, fast), directory


async def serve_http(
    env: Environment,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    ready: Callable[[int], None] | None = None,
) -> None:
    """Serve streamable HTTP with uvicorn until cancelled."""
    import uvicorn

    app, _ = build_http_app(env, host=host, idle_timeout=idle_timeout, factory=factory)
    # httptools parses requests with less CPU than h11 when it is installed ("auto" picks it);
    # the access log is off: at thousands of calls/s it costs more than it tells
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on", access_log=False
    )
    server = uvicorn.Server(config)
    if ready is not None:

        async def _announce() -> None:
            while not server.started:
                await anyio.sleep(0.01)
            ready(port)

        async with anyio.create_task_group() as tg:
            tg.start_soon(_announce)
            await server.serve()
        return
    await server.serve()
