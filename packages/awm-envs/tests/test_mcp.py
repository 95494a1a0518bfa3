"""MCP with the official client: stdio and streamable HTTP, one instance per session, idle reaping."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import mcp
from mcp import StdioServerParameters
from netutil import http_server

from awm_core.testing import await_until
from awm_envs import Environment


def _text(result: Any) -> str:
    return result.content[0].text


def test_stdio_with_the_official_client(library_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "awm_core.cli", "envs", "serve", str(library_path), "--stdio"],
        env={**os.environ, "AWM_LOAD_PLUGINS": "envs"},
    )

    async def run() -> None:
        async with mcp.Client(params) as client:
            tools = (await client.list_tools()).tools
            assert "checkout_copy" in {t.name for t in tools}
            first = await client.call_tool("checkout_copy", {"copy_id": 4})
            assert not first.is_error and first.structured_content["copy_id"] == 4
            again = await client.call_tool(
                "checkout_copy", {"copy_id": 4}
            )  # state kept in the session
            assert again.is_error and "[conflict]" in _text(again)
            bad = await client.call_tool("checkout_copy", {"copy_id": "x"})
            assert bad.is_error and "[invalid_arguments]" in _text(bad)
            unknown = await client.call_tool("no_such_tool", {})
            assert unknown.is_error and "unknown_tool" in _text(unknown)

    asyncio.run(run())


def test_http_sessions_get_isolated_instances(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env) as (url, directory):
            async with mcp.Client(url) as a, mcp.Client(url) as b:
                assert len((await a.list_tools()).tools) == len(library_env.tools)
                assert not (await a.call_tool("checkout_copy", {"copy_id": 4})).is_error
                assert (await a.call_tool("checkout_copy", {"copy_id": 4})).is_error
                assert not (await b.call_tool("checkout_copy", {"copy_id": 4})).is_error
                assert len(directory) == 2
            await asyncio.sleep(0.1)
            assert len(directory) == 0  # closing the session closed its instance

    asyncio.run(run())


def test_http_explicit_instance_ids(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env) as (url, directory):
            async with mcp.Client(f"{url}/i/rollout-7") as c:
                assert not (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            async with mcp.Client(f"{url}/i/rollout-7") as c:  # same id, same instance
                assert (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            async with mcp.Client(f"{url}/i/rollout-8") as c:
                assert not (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            assert {"i:rollout-7", "i:rollout-8"} <= set(directory.keys())

    asyncio.run(run())


def test_idle_instances_are_reaped(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env, idle_timeout=0.3) as (url, directory):
            async with mcp.Client(f"{url}/i/forgotten") as c:
                await c.call_tool("get_book", {"book_id": 1})
            assert "i:forgotten" in directory
            await await_until(lambda: "i:forgotten" not in directory, what="the idle reap")
            assert directory.reaped >= 1

    asyncio.run(run())
