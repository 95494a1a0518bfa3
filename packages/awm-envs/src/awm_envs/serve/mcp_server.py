"""Serve an environment over the Model Context Protocol with the official ``mcp`` SDK.

One isolated instance per MCP session: over stdio the process serves one
client, so one instance; over streamable HTTP every session (its
``mcp-session-id``) gets its own instance, and ``/mcp/i/{instance_id}`` lets a
trainer address many explicit instances behind one server (needed by
sessionless clients, and handy for ``instance_id = rollout id``). Instances
idle longer than ``idle_timeout`` are closed by a reaper task: clients that
vanish without closing their session do not leak databases.

The SDK does not validate arguments against ``input_schema``; the instance
does (see :mod:`awm_core.argcheck`), and every failure comes back as
``is_error`` content with a message the agent can act on.

Limits (``awm envs serve --max-sessions/--idle-timeout/--rate-limit``, or the
same keywords of :func:`build_http_app`): at the session cap a new session
takes the place of the least recently used *idle* session (no request in
flight), whose instance is closed and whose next request is told it was
evicted; only when every session is busy is a new client refused (503). A
client over the per-address rate limit gets 429. On SIGTERM/SIGINT the server
stops within about two seconds however many sessions are open.

This module is the entry point (:func:`serve_http`, :func:`build_http_app`,
:func:`serve_stdio`); the parts are :mod:`~awm_envs.serve.server` (the SDK
server), :mod:`~awm_envs.serve.sessions` (instances per session, the reaper),
:mod:`~awm_envs.serve.limits` (session cap, rate limit),
:mod:`~awm_envs.serve.router` (the ASGI router) and
:mod:`~awm_envs.serve.fastpath` (``tools/call`` without the SDK's machinery).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from awm_core.models import ToolSpec
from awm_envs.runtime.environment import Environment
from awm_envs.serve.fastpath import FastToolCalls
from awm_envs.serve.limits import RateLimiter, SessionLimits
from awm_envs.serve.logs import quiet_client_disconnects
from awm_envs.serve.router import InstancePathRouter
from awm_envs.serve.server import build_server, serve_stdio
from awm_envs.serve.sessions import DEFAULT_IDLE_TIMEOUT_S, InstanceDirectory

DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_RATE_LIMIT = 0.0  # requests/s per client address; 0: off
SHUTDOWN_GRACE_S = 0.5  # in-flight requests get this long after SIGTERM before they are cancelled
SHUTDOWN_DEADLINE_S = 1.6  # ``awm envs serve`` exits this long after SIGTERM at the latest


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
    shared_instance: bool = False,
    token: str | None = None,
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
    None) and ``rate`` (a :class:`RateLimiter`, or None). ``shared_instance``: every
    session uses one instance (see :class:`InstanceDirectory`); ``/mcp/i/{id}`` is
    unchanged. ``token``: every request must carry ``Authorization: Bearer <token>``
    (401 otherwise; see :mod:`awm_envs.serve.guard`).
    """
    if max_sessions is not None and max_sessions < 0:
        raise ValueError("max_sessions must be a number of sessions (0: no cap)")
    if not (math.isfinite(rate_limit) and rate_limit >= 0):
        raise ValueError("rate_limit must be a number of requests per second (0: off)")
    if not (math.isfinite(idle_timeout) and idle_timeout >= 0):
        raise ValueError("idle_timeout must be a number of seconds (0: never)")
    cap = max_sessions or None
    sdk_idle_timeout = idle_timeout if idle_timeout > 0 else None
    server, directory = build_server(
        env,
        idle_timeout=idle_timeout,
        factory=factory,
        tools=tools,
        shared_instance=shared_instance,
    )
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
    quiet_client_disconnects()
    starlette_app.router.lifespan_context = _lifespan(
        starlette_app.router.lifespan_context, directory, limits, rate, idle_timeout
    )
    fast = FastToolCalls(server, directory, idle_timeout) if fast_path else None
    router = InstancePathRouter(starlette_app, "/mcp", directory, fast, limits, rate, token)
    return router, directory


def _lifespan(
    inner_lifespan: Callable[[Any], AbstractAsyncContextManager[Any]],
    directory: InstanceDirectory,
    limits: SessionLimits,
    rate: RateLimiter | None,
    idle_timeout: float,
) -> Callable[[Any], AbstractAsyncContextManager[Any]]:
    """The SDK app's lifespan, plus housekeeping while it serves and a bounded shutdown."""

    async def housekeeping() -> None:
        interval = max(0.05, min(idle_timeout / 4, 30.0)) if idle_timeout > 0 else 30.0
        while True:
            await asyncio.sleep(interval)
            await directory.reap_once()
            limits.prune()
            if rate is not None:
                rate.prune()

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
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

    return lifespan


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
    shared_instance: bool = False,
    token: str | None = None,
) -> None:
    """Serve streamable HTTP with uvicorn until cancelled or signalled.

    ``max_sessions``, ``idle_timeout``, ``rate_limit``, ``shared_instance``, ``token``:
    see :func:`build_http_app`. Connections that send their headers or body too
    slowly are dropped (:class:`~awm_envs.serve.guard.TimedHttpToolsProtocol`).
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
        shared_instance=shared_instance,
        token=token,
    )
    from awm_envs.serve.guard import TimedHttpToolsProtocol

    # httptools parses requests with less CPU than h11 when it is installed ("auto" picks it);
    # the access log is off: at thousands of calls/s it costs more than it tells
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        access_log=False,
        http=TimedHttpToolsProtocol,  # header/body read deadlines: no half-open connections
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


__all__ = [
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_RATE_LIMIT",
    "SHUTDOWN_DEADLINE_S",
    "SHUTDOWN_GRACE_S",
    "build_http_app",
    "serve_http",
    "serve_stdio",
]
