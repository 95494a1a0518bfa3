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

Limits (``awm envs serve --max-sessions/--idle-timeout/--rate-limit``, or the
same keywords of :func:`build_http_app`): at the session cap a new session
takes the place of the least recently used *idle* session (no request in
flight), whose instance is closed and whose next request is told it was
evicted; only when every session is busy is a new client refused (503). A
client over the per-address rate limit gets 429. On SIGTERM/SIGINT the server
stops within about two seconds however many sessions are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import inspect
import json
import logging
import math
import os
import sys
import threading
import time
from collections import OrderedDict
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
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_RATE_LIMIT = 0.0  # requests/s per client address; 0: off
SHUTDOWN_GRACE_S = 0.5  # in-flight requests get this long after SIGTERM before they are cancelled
SHUTDOWN_DEADLINE_S = 1.6  # ``awm envs serve`` exits this long after SIGTERM at the latest

logger = logging.getLogger(__name__)


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
        """Close instances idle longer than ``idle_timeout`` (0: never); return how many."""
        if not self.idle_timeout > 0:
            return 0
        now = time.monotonic()
        stale = [k for k, e in self._entries.items() if now - e.last_used > self.idle_timeout]
        for key in stale:
            await self.close(key)
        self.reaped += len(stale)
        return len(stale)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 30.0)) if self.idle_timeout > 0 else 30.0
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
    tools: list[ToolSpec] | None = None,
) -> tuple[Server[Any], InstanceDirectory]:
    """A low-level MCP server for ``env`` and the directory of its instances.

    ``factory(key)`` makes an instance for a new session (default: an
    in-process instance; pass one that uses a :class:`~awm_envs.workers.WorkerPool`
    to sandbox the tool code, with the ``tools`` it reported, so that the
    bundle's ``app.py`` is never imported in this process).
    """

    async def _default_factory(key: str) -> Any:
        return env.instance()

    directory = InstanceDirectory(factory or _default_factory, idle_timeout)
    mcp_tools = [to_mcp_tool(t) for t in (env.tools if tools is None else tools)]
    manifest = env.manifest  # read from manifest.json: does not import app.py

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool_for(directory, _key_for(ctx), params)

    server: Server[Any] = Server(
        f"awm-{manifest.id}",
        version=manifest.version,
        instructions=manifest.description,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return server, directory


async def serve_stdio(
    env: Environment,
    *,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    tools: list[ToolSpec] | None = None,
) -> None:
    """Serve one client over stdin/stdout until it disconnects (``factory``/``tools``: see :func:`build_server`)."""
    from mcp.server.stdio import stdio_server

    server, directory = build_server(env, idle_timeout=idle_timeout, factory=factory, tools=tools)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await directory.close_all()


class _Throttled:
    """One log line per ``kind`` at most every ``interval`` seconds; the next one says how many were held back."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._last: dict[str, tuple[float, int]] = {}

    def allow(self, kind: str) -> tuple[bool, int]:
        """Whether to log now, and how many lines of this kind were held back since the last one."""
        now = time.monotonic()
        last, held = self._last.get(kind, (-math.inf, 0))
        if now - last >= self.interval:
            self._last[kind] = (now, 0)
            return True, held
        self._last[kind] = (last, held + 1)
        return False, held + 1

    def warning(self, kind: str, message: str) -> None:
        ok, held = self.allow(kind)
        if ok:
            logger.warning("%s%s", message, f" ({held} more since the last report)" if held else "")


_throttled = _Throttled()


class _OneLineClientDisconnects(logging.Filter):
    """The SDK logs a client that hung up mid-request as an error with a traceback: make it one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        from starlette.requests import ClientDisconnect

        if not isinstance(exc, ClientDisconnect):
            return True
        what = record.getMessage()
        record.msg = "client disconnected before its request was complete; dropped it (%s)"
        record.args = (what,)
        record.exc_info = record.exc_text = record.stack_info = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        ok, held = _throttled.allow("disconnect")
        if ok and held:
            record.msg += f" ({held} more since the last report)"
        return ok


def _quiet_client_disconnects() -> None:
    sdk = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _OneLineClientDisconnects) for f in sdk.filters):
        sdk.addFilter(_OneLineClientDisconnects())


def _log_disconnect(scope: dict[str, Any]) -> None:
    ok, held = _throttled.allow("disconnect")
    if ok:
        logger.warning(
            "client disconnected before its request was complete; dropped it (%s %s)%s",
            scope.get("method"),
            scope.get("path"),
            f" ({held} more since the last report)" if held else "",
        )


class RateLimiter:
    """A token bucket per client address: ``rate`` requests/s on average, bursts up to ``burst``.

    O(1) per request; :meth:`prune` (called by the housekeeping task) forgets
    addresses whose bucket has refilled, so the table does not grow with
    every address ever seen.
    """

    def __init__(self, rate: float, burst: float | None = None) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError("rate must be a positive number of requests per second")
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate)
        self._buckets: dict[str, list[float]] = {}  # address -> [tokens, when]
        self.refused = 0

    def check(self, address: str) -> float:
        """0 if a request from ``address`` may go ahead (it takes a token), else seconds until one may."""
        now = time.monotonic()
        bucket = self._buckets.get(address)
        if bucket is None:
            self._buckets[address] = [self.burst - 1.0, now]
            return 0.0
        tokens = min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        self.refused += 1
        return (1.0 - tokens) / self.rate

    def prune(self) -> None:
        now = time.monotonic()
        full = [
            a
            for a, (t, when) in self._buckets.items()
            if t + (now - when) * self.rate >= self.burst
        ]
        for address in full:
            del self._buckets[address]

    def __len__(self) -> int:
        return len(self._buckets)


# set by the router around a request that may open a session, read where the SDK admits it
_OPENING: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "awm_opening", default=None
)
_GONE_MEMORY = 10_000  # ids of evicted/expired sessions remembered, to tell their clients why


class SessionLimits:
    """The session cap: the SDK's sessions in least-recently-used order, with the requests in flight.

    At the cap, a new session takes the place of the least recently used
    *idle* session (no request in flight, not being opened): its transport
    ends, its instance is closed, and its id is remembered so that its next
    request is told it was evicted. When every session is busy the new client
    is refused. The bookkeeping per request is O(1): a counter and an
    ``OrderedDict.move_to_end``; only an eviction walks the order, skipping
    the busy sessions.

    It hooks the SDK's session admission (``_admit_session``), which runs
    under the SDK's lock, so the cap holds under concurrent handshakes. With
    an SDK without that hook it switches itself off (``enabled``) and the
    SDK's own cap applies: new clients are refused, nothing is evicted.
    """

    def __init__(
        self,
        manager: Any,
        directory: InstanceDirectory,
        max_sessions: int | None,
        idle_timeout: float | None,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.directory = directory
        self._sessions: dict[str, Any] = getattr(manager, "_server_instances", None)  # type: ignore[assignment]
        self._owners: dict[str, Any] = getattr(manager, "_session_owners", {})
        admit = getattr(manager, "_admit_session", None)
        self.enabled = isinstance(self._sessions, dict) and callable(admit)
        self._lru: OrderedDict[str, None] = OrderedDict()
        self._busy: dict[str, int] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.evictions = 0
        self.refusals = 0
        if self.enabled:
            self._sdk_admit: Callable[[Any], Any] = admit  # type: ignore[assignment]
            manager._admit_session = self._admit_session
        elif max_sessions is not None:
            logger.warning(
                "this mcp SDK has no session admission hook: at --max-sessions new clients are "
                "refused instead of evicting idle sessions"
            )

    def __len__(self) -> int:
        return len(self._sessions) if self.enabled else 0

    def full(self) -> bool:
        return self.max_sessions is not None and len(self._sessions) >= self.max_sessions

    def _admit_session(self, requestor: Any) -> Any:
        """The SDK's admission, after making room; the new session counts as busy until opened."""
        if self.full() and not self.evict_idle():
            self.refusals += 1
            return None
        transport = self._sdk_admit(requestor)
        session_id = getattr(transport, "mcp_session_id", None)
        if session_id is not None:
            self._lru[session_id] = None
            opening = _OPENING.get()
            if opening is not None:
                opening.append(session_id)
                self._busy[session_id] = self._busy.get(session_id, 0) + 1
        return transport

    def begin(self, session_id: str) -> bool:
        """A request for ``session_id`` starts; True if it is a live session (then call :meth:`end`)."""
        if session_id not in self._sessions:
            return False
        self._busy[session_id] = self._busy.get(session_id, 0) + 1
        if session_id in self._lru:
            self._lru.move_to_end(session_id)
        return True

    def end(self, session_id: str) -> None:
        left = self._busy.get(session_id, 1) - 1
        if left > 0:
            self._busy[session_id] = left
        else:
            self._busy.pop(session_id, None)
        if session_id in self._lru:
            self._lru.move_to_end(session_id)

    def gone(self, session_id: str) -> str | None:
        """Why a session that is no more was ended by the server ("evicted", "expired"), if it was."""
        return self._gone.get(session_id)

    def closed(self, session_id: str) -> None:
        """The client ended its session (DELETE)."""
        self._lru.pop(session_id, None)

    def _remember(self, session_id: str, reason: str) -> None:
        self._lru.pop(session_id, None)
        self._gone[session_id] = reason
        if len(self._gone) > _GONE_MEMORY:
            self._gone.popitem(last=False)

    def evict_idle(self) -> bool:
        """End the least recently used idle session; False if every session is busy."""
        if len(self._busy) >= len(self._sessions):
            return False
        stale: list[str] = []
        victim = None
        for session_id in self._lru:
            transport = self._sessions.get(session_id)
            if transport is None:
                stale.append(session_id)  # ended on its own (idle timeout, crash)
            elif session_id not in self._busy and not getattr(transport, "_requests_in_flight", 0):
                victim = session_id, transport
                break
        for session_id in stale:
            self._remember(session_id, "expired")
        if victim is None:
            return False
        self._evict(*victim)
        return True

    def _evict(self, session_id: str, transport: Any) -> None:
        # forgotten before any await, like the SDK's own discard: from now on the id answers 404
        self._sessions.pop(session_id, None)
        self._owners.pop(session_id, None)
        self._remember(session_id, "evicted")
        idle_scope = getattr(transport, "idle_scope", None)
        if idle_scope is not None:
            idle_scope.cancel()  # ends the session's task, which terminates its transport
        else:
            self._spawn(transport.terminate())
        key = f"s:{session_id}"
        if key in self.directory:
            self._spawn(self.directory.close(key))
        self.evictions += 1
        _throttled.warning(
            "evict",
            f"{len(self._sessions) + 1} sessions open, the cap (--max-sessions {self.max_sessions}): "
            f"evicted the least recently used idle session ({self.evictions} evictions so far)",
        )

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def prune(self) -> None:
        """Forget sessions the SDK ended on its own (idle timeout): O(sessions), from housekeeping."""
        if not self.enabled:
            return
        for session_id in [s for s in self._lru if s not in self._sessions]:
            self._remember(session_id, "expired")

    async def drain(self) -> None:
        """Wait for the closes that evictions started (at shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def gone_message(self, session_id: str, reason: str) -> str:
        if reason == "evicted":
            return (
                f"Session {session_id[:64]} was evicted: the server reached its session cap "
                f"(--max-sessions {self.max_sessions}) and closed its least recently used idle "
                "session. Initialize a new session."
            )
        return (
            f"Session {session_id[:64]} expired: it had no request for longer than the idle timeout "
            f"(--idle-timeout {self.idle_timeout:g} s). Initialize a new session."
        )

    def busy_message(self) -> str:
        return (
            f"Too many open sessions: all {self.max_sessions} sessions (the cap, --max-sessions) "
            "are busy with a request in flight, so none could be evicted to make room. Retry "
            "later, or start the server with a higher --max-sessions."
        )


async def _send_error(
    send: Any,
    status: int,
    code: int,
    message: str,
    request_id: Any = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """A JSON-RPC error body with an HTTP status (what the official client raises as ``MCPError``)."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


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
        limits: SessionLimits | None = None,
        rate: RateLimiter | None = None,
    ) -> None:
        self.app = app
        self.directory = directory
        self.fast = fast
        self.limits = limits if limits is not None and limits.enabled else None
        self.rate = rate
        self.prefix = path.rstrip("/") + "/i/"
        self.path = path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self._handle(scope, receive, send)
        except asyncio.CancelledError:
            # uvicorn cancels the requests still running when its graceful shutdown time is up
            # (an open stream, a call that never ends): one line, not a traceback per request
            _throttled.warning(
                "cancelled",
                f"shutting down: cancelled a request still in flight ({scope['method']} {scope['path']})",
            )

    async def _handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.rate is not None:
            client = scope.get("client")
            address = client[0] if client else ""
            wait = self.rate.check(address)
            if wait:
                await self._refuse_rate(send, address, wait)
                return
        session_id = version = None
        for k, v in scope["headers"]:
            if k == b"mcp-session-id":
                session_id = v.decode("latin-1")
            elif k == b"mcp-protocol-version":
                version = v.decode("latin-1")
        if scope["path"].startswith(self.prefix):
            instance_id = scope["path"][len(self.prefix) :].strip("/")
            if instance_id and "/" not in instance_id:
                scope = dict(scope)
                scope[INSTANCE_SCOPE_KEY] = instance_id
                scope["path"] = self.path
                scope["raw_path"] = self.path.encode()
        elif (
            scope["path"] == self.path
            and scope["method"] == "POST"
            and version is not None
            and version not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            await self._refuse_sessionless(receive, send)
            return
        limits = self.limits
        if limits is None:
            await self._dispatch(scope, receive, send)
        elif session_id is not None:
            reason = limits.gone(session_id)
            if reason is not None:
                await _send_error(send, 404, -32600, limits.gone_message(session_id, reason))
                return
            counted = limits.begin(session_id)
            try:
                await self._dispatch(scope, receive, send)
            finally:
                if counted:
                    limits.end(session_id)
        elif (
            scope["method"] == "POST"
            and scope["path"] == self.path
            and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        ):
            # a request that opens a session: make room (or refuse) before the SDK admits it
            if limits.full() and not limits.evict_idle():
                limits.refusals += 1
                _throttled.warning("refuse", limits.busy_message())
                await _send_error(
                    send, 503, -32603, limits.busy_message(), headers=((b"retry-after", b"1"),)
                )
                return
            opening: list[str] = []
            token = _OPENING.set(opening)
            try:
                await self._dispatch(scope, receive, send)
            finally:
                _OPENING.reset(token)
                for opened in opening:
                    limits.end(opened)
        else:
            await self._dispatch(scope, receive, send)
        if scope["method"] == "DELETE" and session_id and self.directory is not None:
            # the client closed its session: free its instance now rather than at the idle timeout
            if limits is not None:
                limits.closed(session_id)
            await self.directory.close(f"s:{session_id}")

    async def _dispatch(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.fast is not None and scope["method"] == "POST" and scope["path"] == self.path:
            receive = await self.fast.handle(scope, receive, send)
            if receive is None:
                return
        await self.app(scope, receive, send)

    async def _refuse_rate(self, send: Any, address: str, wait: float) -> None:
        assert self.rate is not None
        message = (
            f"Too many requests from {address or 'this client'}: over the rate limit of "
            f"{self.rate.rate:g} requests/s per client address (--rate-limit). "
            f"Retry in {wait:.2f} s."
        )
        _throttled.warning("rate", message)
        retry = str(max(1, math.ceil(wait))).encode()
        await _send_error(send, 429, -32000, message, headers=((b"retry-after", retry),))

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
        if disconnected:  # nobody to answer: one log line, nothing for the SDK to parse
            _log_disconnect(scope)
            return None
        replay = _replaying(body, more, disconnected, receive)
        if more:
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
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    fast_path: bool = True,
    tools: list[ToolSpec] | None = None,
    rate_limit: float = DEFAULT_RATE_LIMIT,
) -> tuple[Any, InstanceDirectory]:
    """The streamable-HTTP ASGI app (``/mcp`` and ``/mcp/i/{id}``) and its instance directory.

    ``max_sessions``: the session cap (0 or None: none); at the cap the least
    recently used idle session is evicted to make room, and only when every
    session has a request in flight is a new client refused (503).
    ``idle_timeout``: seconds after which an idle session and its instance
    are closed (0: never). ``rate_limit``: requests per second per client
    address, answered 429 above it (0: off). ``fast_path=False`` sends every
    request through the SDK (the reference behaviour the fast path is tested
    against). The returned app has ``limits`` (a :class:`SessionLimits`, or
    None) and ``rate`` (a :class:`RateLimiter`, or None).
    """
    if max_sessions is not None and max_sessions < 0:
        raise ValueError("max_sessions must be a number of sessions (0: no cap)")
    if not (math.isfinite(rate_limit) and rate_limit >= 0):
        raise ValueError("rate_limit must be a number of requests per second (0: off)")
    if not (math.isfinite(idle_timeout) and idle_timeout >= 0):
        raise ValueError("idle_timeout must be a number of seconds (0: never)")
    cap = max_sessions or None
    sdk_idle_timeout = idle_timeout if idle_timeout > 0 else None
    server, directory = build_server(env, idle_timeout=idle_timeout, factory=factory, tools=tools)
    starlette_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        json_response=True,  # one JSON body per request: cheaper than an SSE stream per call
        session_idle_timeout=sdk_idle_timeout,
        max_sessions=cap,
    )
    limits = SessionLimits(
        getattr(server, "_session_manager", None), directory, cap, sdk_idle_timeout
    )
    rate = RateLimiter(rate_limit) if rate_limit > 0 else None
    _quiet_client_disconnects()
    inner_lifespan = starlette_app.router.lifespan_context

    async def housekeeping() -> None:
        interval = max(0.05, min(idle_timeout / 4, 30.0)) if idle_timeout > 0 else 30.0
        while True:
            await asyncio.sleep(interval)
            await directory.reap_once()
            limits.prune()
            if rate is not None:
                rate.prune()

    @contextlib.asynccontextmanager
    async def lifespan(app: Any):  # type: ignore[no-untyped-def]
        gc_enabled = gc.isenabled()
        try:
            async with inner_lifespan(app) as state:
                task = asyncio.create_task(housekeeping())
                try:
                    yield state
                finally:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                    # Ending thousands of sessions allocates and frees per session; with the
                    # collector on, full collections over all the live sessions are most of
                    # the shutdown's time (4,000 sessions: 2.7 s, 1.0 s without).
                    gc.disable()
                    with anyio.move_on_after(SHUTDOWN_GRACE_S * 2):
                        await limits.drain()
                        await directory.close_all()
        finally:
            if gc_enabled:
                gc.enable()

    starlette_app.router.lifespan_context = lifespan
    fast = _FastToolCalls(server, directory, idle_timeout) if fast_path else None
    router = _InstancePathRouter(starlette_app, "/mcp", directory, fast, limits, rate)
    return router, directory


def _exit_after(seconds: float, sig: int, app: Any) -> None:
    """End the process ``seconds`` from now unless it has ended by then (a daemon timer thread)."""

    limits = getattr(app, "limits", None)
    sessions = len(limits) if limits is not None else "?"

    def expire() -> None:
        try:
            sys.stderr.write(
                f"shutdown still running {seconds:g} s after signal {sig} "
                f"({sessions} sessions were open): exiting now\n"
            )
            sys.stderr.flush()
        finally:
            os._exit(128 + sig)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


async def serve_http(
    env: Environment,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    ready: Callable[[int], None] | None = None,
    tools: list[ToolSpec] | None = None,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    rate_limit: float = DEFAULT_RATE_LIMIT,
    shutdown_grace: float = SHUTDOWN_GRACE_S,
    exit_deadline: float | None = None,
) -> None:
    """Serve streamable HTTP with uvicorn until cancelled or signalled.

    ``max_sessions``, ``idle_timeout``, ``rate_limit``: see :func:`build_http_app`.
    On SIGTERM/SIGINT, requests in flight get ``shutdown_grace`` seconds and
    then every session is closed. ``exit_deadline`` is for a process that
    only serves (``awm envs serve``): if the shutdown is still running that
    many seconds after the signal, the process exits there and then.
    """
    import uvicorn

    app, _ = build_http_app(
        env,
        host=host,
        idle_timeout=idle_timeout,
        factory=factory,
        tools=tools,
        max_sessions=max_sessions,
        rate_limit=rate_limit,
    )
    # httptools parses requests with less CPU than h11 when it is installed ("auto" picks it);
    # the access log is off: at thousands of calls/s it costs more than it tells
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        # without it, a request that never completes (an open stream) holds shutdown forever
        timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]  # a float works
    )

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            first = not self.should_exit
            super().handle_exit(sig, frame)
            if first and exit_deadline is not None:
                _exit_after(exit_deadline, sig, app)

    server = _Server(config)
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
