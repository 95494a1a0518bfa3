"""Serving safely beyond loopback: a bearer token, capped bodies, no half-open connections,
and bundles from outside the catalog sandboxed by default."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp
import pytest
from click.testing import CliRunner
from hostile import make_hostile_bundle
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from netutil import free_port

from awm_envs import Environment
from awm_envs.cli.main import envs
from awm_envs.serve import guard
from awm_envs.serve.mcp_server import serve_http

TOKEN = "s3cret-token-for-tests"


@contextlib.asynccontextmanager
async def serving(env: Environment, **kw: Any) -> AsyncIterator[int]:
    port = free_port()
    started = asyncio.Event()
    task = asyncio.create_task(
        serve_http(env, port=port, ready=lambda _p: started.set(), shutdown_grace=0.5, **kw)
    )
    await asyncio.wait_for(started.wait(), 60)
    try:
        yield port
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def _client(url: str, token: str | None) -> mcp.Client:
    """The official client; with a token, through an HTTP client that sends it (as the docs show)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    return mcp.Client(streamable_http_client(url, http_client=http))


async def _raw(port: int, request: bytes, read_timeout: float = 10.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(65536), read_timeout)
    finally:
        writer.close()


def test_a_non_loopback_bind_needs_a_token_or_an_explicit_no_auth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(guard.TOKEN_ENV, raising=False)
    out = CliRunner().invoke(envs, ["serve", "shop", "--host", "0.0.0.0", "--port", "1"])
    assert out.exit_code == 2, out.output
    assert "--token" in out.output and "AWM_MCP_TOKEN" in out.output and "--no-auth" in out.output
    assert guard.resolve_token("0.0.0.0", None, no_auth=True) is None
    assert guard.resolve_token("127.0.0.1", None, no_auth=False) is None
    assert guard.resolve_token("::1", TOKEN, no_auth=False) == TOKEN
    monkeypatch.setenv(guard.TOKEN_ENV, TOKEN)
    assert guard.resolve_token("10.0.0.5", None, no_auth=False) == TOKEN


def test_with_a_token_only_requests_that_carry_it_are_served(library_env: Environment) -> None:
    async def run() -> None:
        async with serving(library_env, token=TOKEN) as port:
            url = f"http://127.0.0.1:{port}/mcp"
            async with _client(url, TOKEN) as client:
                tools = (await client.list_tools()).tools
                assert "checkout_copy" in {t.name for t in tools}
                r = await client.call_tool("checkout_copy", {"copy_id": 4})
                assert not r.is_error
            for wrong in (None, "not-the-token", TOKEN + "x"):
                with pytest.raises(Exception):  # noqa: B017 - the client raises its own error type
                    async with _client(f"{url}/i/victim", wrong) as client:
                        await client.list_tools()
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
            answer = await _raw(
                port,
                b"POST /mcp/i/victim HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body),
            )
            assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
            assert b'www-authenticate: bearer realm="awm"' in answer.lower()

    asyncio.run(run())


@pytest.mark.parametrize("version", ["2025-06-18", "2099-01-01"])
def test_every_request_body_is_capped_before_it_is_read(
    library_env: Environment, version: str
) -> None:
    """A declared 100 MB body is refused at once, on the handshake path and the other one."""

    async def run() -> None:
        async with serving(library_env) as port:
            head = (
                f"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                f"accept: application/json, text/event-stream\r\nmcp-protocol-version: {version}\r\n"
                f"content-length: {100 * 1024 * 1024}\r\n\r\n"
            ).encode()
            answer = await _raw(port, head + b'{"jsonrpc": "2.0", ')  # and nothing more
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            # chunked, no length: read up to the cap, then refused
            chunk = b"x" * (1 << 20)
            head = (
                b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"mcp-protocol-version: 2099-01-01\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(10))
            answer = await _raw(port, head + body, read_timeout=30)
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]

    asyncio.run(run())


def test_half_open_connections_are_dropped(
    library_env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Silent, header-dribbling and body-dribbling clients are cut off at their deadline."""
    monkeypatch.setattr(guard.TimedHttpToolsProtocol, "header_timeout", 0.5)
    monkeypatch.setattr(guard.TimedHttpToolsProtocol, "body_timeout", 0.5)

    async def closed_by_server(port: int, sent: bytes) -> bool:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(sent)
        await writer.drain()
        try:
            data = await asyncio.wait_for(reader.read(65536), 30)
        finally:
            writer.close()
        return data == b""  # EOF: the server closed it without an answer

    async def run() -> None:
        async with serving(library_env) as port:
            silent = closed_by_server(port, b"")
            headers = closed_by_server(port, b"POST /mcp HTTP/1.1\r\nhost: x\r\n")
            body = closed_by_server(
                port, b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"
            )
            assert await asyncio.gather(silent, headers, body) == [True, True, True]
            # and the server still serves a normal client
            async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert (await client.list_tools()).tools

    asyncio.run(run())


def _cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "AWM_LOAD_PLUGINS": "envs", **extra}


def test_serve_of_a_folder_outside_the_catalog_is_sandboxed_by_default(tmp_path: Path) -> None:
    bundle = make_hostile_bundle(tmp_path)
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=["-m", "awm_core.cli", "envs", "serve", str(bundle), "--stdio"],
        env=_cli_env(OPENAI_API_KEY="sk-host-secret"),
    )

    async def run() -> dict[str, Any]:
        async with mcp.Client(params) as client:
            r = await client.call_tool("debug_environ", {})
            assert not r.is_error
            return dict(r.structured_content["environ"])

    environ = asyncio.run(run())
    assert environ.get("AWM_INSIDE_SANDBOX") == "1" and "OPENAI_API_KEY" not in environ


def test_serving_a_folder_in_process_needs_the_flag_that_names_the_risk(tmp_path: Path) -> None:
    bundle = make_hostile_bundle(tmp_path)
    out = CliRunner().invoke(envs, ["serve", str(bundle), "--stdio", "--workers", "0"])
    assert out.exit_code == 2, out.output
    assert "--run-untrusted-code-in-process" in out.output and "API keys" in out.output


def test_serve_of_an_app_py_that_exits_at_import_says_so(tmp_path: Path) -> None:
    bundle = make_hostile_bundle(tmp_path)
    with (bundle / "app.py").open("a") as fh:
        fh.write("\nimport os as _o\n_o._exit(3)\n")
    done = subprocess.run(
        [sys.executable, "-m", "awm_core.cli", "envs", "serve", str(bundle),
         "--port", str(free_port())],
        capture_output=True, text=True, timeout=120, env=_cli_env(),
    )  # fmt: skip
    assert done.returncode not in (0, 3), (done.returncode, done.stderr)
    assert "app.py" in done.stderr and "exited with status 3" in done.stderr, done.stderr


def test_the_docs_show_the_token_for_the_official_client_and_the_trainer() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "security.md").read_text()
    assert "--token" in text and "AWM_MCP_TOKEN" in text
    assert "streamable_http_client" in text and "Authorization" in text
