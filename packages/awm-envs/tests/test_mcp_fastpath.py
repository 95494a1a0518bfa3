"""The ``tools/call`` fast path answers exactly as the SDK path does, and keeps SDK sessions alive."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import mcp
from netutil import http_server
from rawmcp import RawMCPSession

from awm_envs import Environment

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("checkout_copy", {"copy_id": 4}),  # success, structured content
    ("checkout_copy", {"copy_id": 4}),  # conflict: state kept in the session
    ("checkout_copy", {"copy_id": "x"}),  # invalid arguments
    ("no_such_tool", {}),  # unknown tool
    ("get_book", {"book_id": 1}),
]


def _wire(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _run_calls(url: str) -> list[dict[str, Any]]:
    async with mcp.Client(url) as client:
        return [_wire(await client.call_tool(name, args)) for name, args in CALLS]


def test_fast_path_answers_like_the_sdk(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env, fast_path=False) as (url, directory):
            reference = await _run_calls(url)
            assert directory.app.fast is None
        async with http_server(library_env) as (url, directory):
            fast = await _run_calls(url)
            assert directory.app.fast.served == len(CALLS)  # every call took the fast path
        assert fast == reference
        assert [r.get("isError", False) for r in fast] == [False, True, True, True, False]

    asyncio.run(run())


def test_explicit_instances_with_a_session_take_the_fast_path(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env) as (url, directory):
            async with mcp.Client(f"{url}/i/r1", mode="legacy") as c:
                assert not (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            async with mcp.Client(f"{url}/i/r1", mode="legacy") as c:
                assert (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            assert "i:r1" in directory and directory.app.fast.served == 2
            async with mcp.Client(f"{url}/i/r1") as c:  # sessionless (2026-era): the SDK's path
                assert (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            assert directory.app.fast.served == 2

    asyncio.run(run())


def test_fast_calls_keep_the_sdk_session_alive(library_env: Environment) -> None:
    async def run() -> None:
        async with (
            http_server(library_env, idle_timeout=0.6) as (url, directory),
            mcp.Client(url) as client,
        ):
            for _ in range(8):  # 1.6 s of fast-path-only traffic, past the idle timeout
                assert not (await client.call_tool("get_book", {"book_id": 1})).is_error
                await asyncio.sleep(0.2)
            assert len((await client.list_tools()).tools) == len(library_env.tools)  # SDK path
            assert directory.app.fast.served == 8

    asyncio.run(run())


def test_unknown_session_is_left_to_the_sdk(library_env: Environment) -> None:
    async def run() -> None:
        async with http_server(library_env) as (url, directory):
            parts = urlsplit(url)
            session = await RawMCPSession(parts.hostname or "", parts.port or 0, parts.path).open()
            session.session_id = "not-a-session"
            status, _, answer = await session._post(
                {
                    "method": "tools/call",
                    "params": {"name": "get_book", "arguments": {"book_id": 1}},
                }
            )
            assert status == 404 and "error" in answer and directory.app.fast.served == 0
            await session.close()

    asyncio.run(run())


def test_bench_load_generator_is_an_mcp_client(library_env: Environment) -> None:
    """The raw load generator handshakes with the SDK itself (fast path off) and validates results."""

    async def run() -> None:
        async with http_server(library_env, fast_path=False) as (url, directory):
            parts = urlsplit(url)
            session = await RawMCPSession(parts.hostname or "", parts.port or 0, parts.path).open()
            first = await session.call_tool("checkout_copy", {"copy_id": 4})
            again = await session.call_tool("checkout_copy", {"copy_id": 4})
            assert not first.is_error and first.structured_content["copy_id"] == 4
            assert again.is_error
            assert len(directory) == 1
            await session.close()
            await asyncio.sleep(0.1)
            assert len(directory) == 0  # DELETE ended the session and freed its instance

    asyncio.run(run())
