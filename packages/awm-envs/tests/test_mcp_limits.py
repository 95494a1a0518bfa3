"""Server limits (issue #11, finding 6): a session cap that evicts instead of locking clients out,
a per-client rate limit, a bounded shutdown, one-line client-disconnect logs."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp
import pytest
import uvicorn
from click.testing import CliRunner
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from netutil import free_port
from rawmcp import RawMCPSession

from awm_core.models import ToolResult
from awm_core.testing import await_until
from awm_envs import Environment
from awm_envs.cli.main import envs
from awm_envs.serve import logs
from awm_envs.serve.mcp_server import build_http_app

INITIALIZE = {
    "method": "initialize",
    "params": {
        "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"},
    },
}


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[int]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def flood(port: int, count: int, connections: int = 1) -> collections.Counter[int]:
    """``count`` initialize requests from one client (keep-alive connections), never followed up."""
    statuses: collections.Counter[int] = collections.Counter()

    async def one_connection(n: int) -> None:
        raw = RawMCPSession("127.0.0.1", port, "/mcp")
        raw._reader, raw._writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(n):
                status, _, _ = await raw._post(INITIALIZE)
                statuses[status] += 1
        finally:
            raw._writer.close()

    share = [count // connections] * connections
    share[0] += count - sum(share)
    await asyncio.gather(*(one_connection(n) for n in share))
    return statuses


def sdk_sessions(app: Any) -> dict[str, Any]:
    sessions = app.fast._sessions
    assert isinstance(sessions, dict)
    return sessions


def test_a_flood_of_initializes_does_not_lock_out_a_new_official_client(
    library_env: Environment,
) -> None:
    async def run() -> None:
        app, directory = build_http_app(library_env, max_sessions=20)
        async with serving(app) as port:
            statuses = await flood(port, 300, connections=2)
            assert statuses == {200: 300}, statuses  # nobody refused: idle sessions made room
            assert len(sdk_sessions(app)) <= 20
            # a brand-new client through the official streamable-HTTP transport still gets in
            async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:
                tools = (await client.list_tools()).tools
                assert "get_book" in {t.name for t in tools}
                result = await client.call_tool("get_book", {"book_id": 1})
                assert not result.is_error, result
            assert app.limits.evictions >= 280
            assert len(sdk_sessions(app)) <= 20

    asyncio.run(run())


class _GatedInstance:
    """A real instance whose calls with ``{"hold": true}`` wait for the test to open the gate."""

    def __init__(self, env: Environment, gate: asyncio.Event, closed: list[str], key: str) -> None:
        self.inner = env.instance()
        self.gate, self.closed, self.key = gate, closed, key

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if arguments.pop("hold", False):
            await self.gate.wait()
        return await self.inner.call_tool(name, arguments)

    def close(self) -> None:
        self.closed.append(self.key)
        self.inner.close()


def test_b_eviction_takes_the_least_recently_used_idle_session(library_env: Environment) -> None:
    async def run() -> None:
        gate = asyncio.Event()
        closed: list[str] = []

        async def factory(key: str) -> Any:
            return _GatedInstance(library_env, gate, closed, key)

        app, directory = build_http_app(library_env, max_sessions=3, factory=factory)
        async with serving(app) as port:
            a, b, c = (RawMCPSession("127.0.0.1", port, "/mcp") for _ in range(3))
            for s in (a, b, c):
                await s.open()
                assert not (await s.call_tool("get_book", {"book_id": 1})).is_error
            # a: oldest, but busy (a call in flight); c: idle; b: used most recently
            held = asyncio.create_task(a.call_tool("get_book", {"book_id": 1, "hold": True}))
            await asyncio.sleep(0.2)
            assert not (await b.call_tool("get_book", {"book_id": 2})).is_error

            d = await RawMCPSession("127.0.0.1", port, "/mcp").open()  # at the cap
            assert app.limits.evictions == 1
            await await_until(lambda: bool(closed), what="the evicted instance closed")
            assert closed == [f"s:{c.session_id}"]  # c's instance was closed, nobody else's
            assert c.session_id not in sdk_sessions(app)
            status, _, answer = await c._post(
                {"method": "tools/call", "params": {"name": "get_book", "arguments": {}}}
            )
            assert status == 404 and "evicted" in answer["error"]["message"]
            assert "--max-sessions" in answer["error"]["message"]

            gate.set()
            assert not (await held).is_error  # the busy session was left alone
            assert not (await b.call_tool("get_book", {"book_id": 3})).is_error
            assert not (await d.call_tool("get_book", {"book_id": 1})).is_error
            assert set(sdk_sessions(app)) == {a.session_id, b.session_id, d.session_id}

            # every session busy: the new client is refused, with the cap and the flag named
            gate.clear()
            holds = [
                asyncio.create_task(s.call_tool("get_book", {"book_id": 1, "hold": True}))
                for s in (a, b, d)
            ]
            await asyncio.sleep(0.2)
            refused = RawMCPSession("127.0.0.1", port, "/mcp")
            refused._reader, refused._writer = await asyncio.open_connection("127.0.0.1", port)
            status, _, answer = await refused._post(INITIALIZE)
            assert status == 503
            message = answer["error"]["message"]
            assert "3" in message and "--max-sessions" in message and "busy" in message
            assert app.limits.refusals == 1
            gate.set()
            assert not any(r.is_error for r in await asyncio.gather(*holds))
            await refused.close()
            for s in (a, b, c, d):
                await s.close()

    asyncio.run(run())


def test_c_rate_limit_answers_429(library_env: Environment) -> None:
    async def run() -> None:
        app, _ = build_http_app(library_env, rate_limit=5)
        async with serving(app) as port:
            session = RawMCPSession("127.0.0.1", port, "/mcp")
            session._reader, session._writer = await asyncio.open_connection("127.0.0.1", port)
            statuses, answers = collections.Counter(), []
            started = time.monotonic()
            for _ in range(20):
                status, headers, answer = await session._post(INITIALIZE)
                statuses[status] += 1
                if status == 429:
                    answers.append((headers, answer))
            # a bucket of 5 that refills at 5/s: at most 5 + 5 per elapsed second get through,
            # however fast or slow this runner sent them (counts, not a stopwatch bound)
            allowed = 5 + 5 * (time.monotonic() - started) + 1
            assert statuses[429] >= 1 and 1 <= statuses[200] <= allowed, statuses
            headers, answer = answers[0]
            assert "rate limit" in answer["error"]["message"]
            assert "--rate-limit" in answer["error"]["message"]
            assert int(headers["retry-after"]) >= 1
            await asyncio.sleep(1.1)  # the bucket refills
            status, _, _ = await session._post(INITIALIZE)
            assert status == 200
            assert app.rate is not None and app.rate.refused == statuses[429]
            session._writer.close()

    asyncio.run(run())


def test_rate_limit_off_by_default_and_limits_validated(library_env: Environment) -> None:
    app, _ = build_http_app(library_env)
    assert app.rate is None and app.limits.max_sessions == 10_000
    with pytest.raises(ValueError):
        build_http_app(library_env, max_sessions=-1)
    with pytest.raises(ValueError):
        build_http_app(library_env, rate_limit=-1)


def test_client_disconnect_is_one_log_line(
    library_env: Environment, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        app, _ = build_http_app(library_env)
        async with serving(app) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
                "accept: application/json, text/event-stream\r\n"
                "content-type: application/json\r\ncontent-length: 500\r\n\r\n"
            )
            writer.write(head.encode() + b'{"jsonrpc": "2.0", "id": 1, ')
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.transport.abort()  # gone before the body was complete
            await asyncio.sleep(0.3)

    logs.throttle._last.clear()  # a disconnect logged by an earlier test would hold this one back
    with caplog.at_level(logging.INFO):
        asyncio.run(run())
    lines = [r for r in caplog.records if "disconnect" in r.getMessage().lower()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert lines[0].exc_info is None and "\n" not in lines[0].getMessage()
    assert "Traceback" not in caplog.text


async def open_event_stream(port: int) -> asyncio.StreamWriter:
    """A session with its standalone SSE stream (GET) open: a request that stays in flight."""
    session = await RawMCPSession("127.0.0.1", port, "/mcp").open()
    assert session.session_id
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        (
            f"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: text/event-stream\r\n"
            f"mcp-session-id: {session.session_id}\r\n"
            f"mcp-protocol-version: {session.protocol_version}\r\n\r\n"
        ).encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head, head
    return writer


def _serve_subprocess(env_path: Path, port: int, *flags: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "awm_core.cli", "envs", "serve", str(env_path), "--port", str(port)]
        + list(flags),
        env={**os.environ, "AWM_LOAD_PLUGINS": "envs"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def _wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            async with mcp.Client(url) as client:
                await client.list_tools()
            return
        except Exception:
            assert time.monotonic() < deadline, "the server did not come up"
            await asyncio.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_d_a_signal_stops_a_server_with_a_thousand_sessions_within_2s(
    library_path: Path, sig: signal.Signals
) -> None:
    port = free_port()
    proc = _serve_subprocess(library_path, port)
    try:

        async def run() -> None:
            t0 = time.monotonic()
            await _wait_ready(f"http://127.0.0.1:{port}/mcp", proc)
            t1 = time.monotonic()
            statuses = await flood(port, 1200, connections=4)
            assert statuses == {200: 1200}
            print(f"server up in {t1 - t0:.1f} s, flood in {time.monotonic() - t1:.1f} s")
            streams = [await open_event_stream(port) for _ in range(3)]  # never end by themselves
            # and one client still connected (with its session and an open connection)
            async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:
                await client.list_tools()
                start = time.monotonic()
                proc.send_signal(sig)
                while proc.poll() is None and time.monotonic() - start < 10:
                    await asyncio.sleep(0.02)
                elapsed = time.monotonic() - start
                assert proc.poll() is not None, "still running 10 s after SIGTERM"
                print(f"{sig.name} to exit: {elapsed:.2f} s, exit code {proc.returncode}")
            for writer in streams:
                writer.close()

        with contextlib.suppress(BaseExceptionGroup):  # the client's goodbye finds no server
            asyncio.run(run())
        assert proc.poll() is not None
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_e_serve_help_lists_the_limit_flags() -> None:
    result = CliRunner().invoke(envs, ["serve", "--help"])
    assert result.exit_code == 0, result.output
    for flag in ("--max-sessions", "--idle-timeout", "--rate-limit"):
        assert flag in result.output


def test_limits_reach_the_server_from_the_cli(
    library_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    async def fake_serve_http(env: Any, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr("awm_envs.serve.mcp_server.serve_http", fake_serve_http)
    result = CliRunner().invoke(
        envs,
        [
            "serve",
            str(library_path),
            "--max-sessions",
            "50",
            "--idle-timeout",
            "30",
            "--rate-limit",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    assert seen["max_sessions"] == 50 and seen["idle_timeout"] == 30
    assert seen["rate_limit"] == 200


def test_new_session_json_error_shape(library_env: Environment) -> None:
    """503/404/429 bodies are JSON-RPC errors the official client surfaces as MCPError."""

    async def run() -> None:
        app, _ = build_http_app(library_env, max_sessions=1)
        async with serving(app) as port:
            s = await RawMCPSession("127.0.0.1", port, "/mcp").open()
            s2 = await RawMCPSession("127.0.0.1", port, "/mcp").open()  # evicts s
            status, headers, answer = await s._post({"method": "tools/list"})
            assert status == 404 and headers["content-type"].startswith("application/json")
            assert answer["jsonrpc"] == "2.0" and answer["error"]["code"] < 0
            json.dumps(answer)
            await s2.close()
            await s.close()

    asyncio.run(run())


def test_an_expired_session_is_told_so_and_idle_timeout_0_never_expires(
    library_env: Environment,
) -> None:
    async def run() -> None:
        app, directory = build_http_app(library_env, idle_timeout=0.3)
        async with serving(app) as port:
            s = await RawMCPSession("127.0.0.1", port, "/mcp").open()
            assert not (await s.call_tool("get_book", {"book_id": 1})).is_error
            await await_until(lambda: len(directory) == 0, what="the idle session expired")
            status, _, answer = await s._post({"method": "tools/list"})
            assert status == 404 and "expired" in answer["error"]["message"]
            assert "--idle-timeout" in answer["error"]["message"]
            assert len(directory) == 0
            await s.close()
        app, directory = build_http_app(library_env, idle_timeout=0)
        async with serving(app) as port:
            s = await RawMCPSession("127.0.0.1", port, "/mcp").open()
            assert not (await s.call_tool("get_book", {"book_id": 1})).is_error
            assert await directory.reap_once() == 0
            await asyncio.sleep(0.3)
            assert not (await s.call_tool("get_book", {"book_id": 2})).is_error
            await s.close()

    asyncio.run(run())
