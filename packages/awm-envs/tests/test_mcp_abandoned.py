"""A server whose clients vanish: 1,000 abandoned HTTP sessions are released after the idle timeout."""

from __future__ import annotations

import asyncio
import contextlib
import gc

import pytest
import uvicorn
from netutil import free_port
from rawmcp import RawMCPSession

from awm_envs import Environment
from awm_envs.serve.mcp_server import build_http_app

pytestmark = pytest.mark.slow

SESSIONS = 1000


def _sdk_sessions(app: object) -> dict[str, object] | None:
    """The SDK's own session table, reached the way the fast path reaches it."""
    fast = getattr(app, "fast", None)
    return getattr(fast, "_sessions", None)


def test_abandoned_sessions_are_released_after_the_idle_timeout(library_env: Environment) -> None:
    async def run() -> None:
        port = free_port()
        # 5 s: a wave of 100 handshakes on a loaded 2-core CI machine can take over 2 s
        app, directory = build_http_app(library_env, idle_timeout=5.0)
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
        )
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        try:
            clients: list[RawMCPSession] = []
            for _ in range(
                SESSIONS // 100
            ):  # in waves, each session used at once (it has an instance)
                wave = [RawMCPSession("127.0.0.1", port, "/mcp") for _ in range(100)]
                await asyncio.gather(*(c.open() for c in wave))
                results = await asyncio.gather(
                    *(c.call_tool("get_book", {"book_id": 1}) for c in wave)
                )
                assert not any(r.is_error for r in results)
                clients += wave
            # a session idle past the timeout may already be gone; none may outlive it
            assert len(directory) > 0
            sdk = _sdk_sessions(app)
            assert sdk is not None and len(sdk) > 0, "cannot see the SDK session table"
            # vanish: drop every connection without ending the session (no DELETE)
            for c in clients:
                assert c._writer is not None
                c._writer.transport.abort()
            clients.clear()
            deadline = asyncio.get_running_loop().time() + 30
            while asyncio.get_running_loop().time() < deadline:
                if len(directory) == 0 and (sdk is None or len(sdk) == 0):
                    break
                await asyncio.sleep(0.25)
            assert len(directory) == 0, f"{len(directory)} instances still held"
            assert directory.reaped >= SESSIONS
            if sdk is not None:
                assert len(sdk) == 0, f"the SDK still holds {len(sdk)} sessions"
            gc.collect()
        finally:
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 10)

    asyncio.run(run())
