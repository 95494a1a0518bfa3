"""Serving for clients built around the official AWM release: a session per call
(``--shared-instance``), named instances (``/mcp/i/{id}``), databases saved for an
official verifier (``awm envs call --save-db``)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import mcp
from click.testing import CliRunner
from netutil import http_server

from awm_envs import Environment


def serving(env: Environment, shared: bool):  # type: ignore[no-untyped-def]
    return http_server(env, shared_instance=shared)


async def _one_call_per_session(url: str, copy_id: int) -> tuple[bool, bool]:
    """Two checkouts of one copy, each in a session of its own (what the official client does)."""
    results = []
    for _ in range(2):
        async with mcp.Client(url) as client:
            results.append((await client.call_tool("checkout_copy", {"copy_id": copy_id})).is_error)
    return results[0], results[1]


def test_shared_instance_keeps_writes_across_per_call_sessions(library_env: Environment) -> None:
    async def run() -> None:
        async with serving(library_env, shared=True) as (url, directory):
            first_failed, second_failed = await _one_call_per_session(url, 4)
            assert not first_failed and second_failed  # the second saw the first's loan
            await asyncio.sleep(0.1)
            assert directory.keys() == ["shared"]  # closing the sessions kept it

    asyncio.run(run())


def test_without_shared_instance_each_session_starts_fresh(library_env: Environment) -> None:
    async def run() -> None:
        async with serving(library_env, shared=False) as (url, _):
            assert await _one_call_per_session(url, 4) == (False, False)

    asyncio.run(run())


def test_named_instances_stay_apart_from_the_shared_one(library_env: Environment) -> None:
    async def run() -> None:
        async with serving(library_env, shared=True) as (url, directory):
            async with mcp.Client(f"{url}/i/run-1") as c:
                assert not (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            async with mcp.Client(url) as c:
                assert not (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            async with mcp.Client(f"{url}/i/run-1") as c:
                assert (await c.call_tool("checkout_copy", {"copy_id": 6})).is_error
            assert set(directory.keys()) == {"i:run-1", "shared"}

    asyncio.run(run())


def test_call_save_db_writes_sqlite_files_before_and_after(
    library_path: Path, tmp_path: Path
) -> None:
    from awm_envs.cli.main import envs

    out = CliRunner().invoke(
        envs,
        [
            "call",
            str(library_path),
            "checkout_copy",
            "--args",
            json.dumps({"copy_id": 4}),
            "--save-db",
            str(tmp_path / "dbs"),
        ],
    )
    assert out.exit_code == 0, out.output
    count = "SELECT COUNT(*) FROM loans WHERE copy_id = 4"
    before = sqlite3.connect(tmp_path / "dbs" / "initial.db").execute(count).fetchone()[0]
    after = sqlite3.connect(tmp_path / "dbs" / "final.db").execute(count).fetchone()[0]
    assert after == before + 1
