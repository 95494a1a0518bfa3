"""Sandbox workers: a hang, a crash or the memory limit costs one worker, never the pool."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from awm_envs.errors import PoolClosedError
from awm_envs.pool.remote import WorkerPool
from awm_envs.sandbox.process import sandbox_env


def test_hang_and_crash_are_environment_errors_and_workers_are_replaced(hostile_path: Path) -> None:
    async def run() -> None:
        async with WorkerPool(2, call_timeout=1.5, memory_limit=None) as pool:
            victim = await pool.create(hostile_path)
            bystander = await pool.create(hostile_path)
            assert victim.worker is not bystander.worker
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error
            bystander_image = await bystander.snapshot()
            old_pid = victim.pid

            hung = await victim.call_tool("debug_hang", {})
            assert hung.is_error and hung.error_type == "environment_error"
            assert "did not finish" in hung.content and "reset to its initial state" in hung.content
            assert pool.replaced == 1 and pool.workers[victim.worker.index].pid != old_pid
            # recreated from the template on a live worker by its next call: no reset() needed
            assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error
            assert victim.pid != old_pid

            crashed = await victim.call_tool("debug_crash", {})
            assert crashed.error_type == "environment_error" and "crashed" in crashed.content
            assert pool.replaced == 2

            assert await bystander.snapshot() == bystander_image
            assert not (await bystander.call_tool("get_book", {"book_id": 2})).is_error

    asyncio.run(run())


def test_memory_limit_turns_a_hog_into_an_error(hostile_path: Path) -> None:
    async def run() -> None:
        async with WorkerPool(1, call_timeout=20, memory_limit=1024**3) as pool:
            inst = await pool.create(hostile_path)
            assert not (await inst.call_tool("checkout_copy", {"copy_id": 4})).is_error
            image = await inst.snapshot()
            hog = await inst.call_tool("debug_hog", {"megabytes": 4096})
            assert hog.is_error and hog.error_type == "environment_error"
            assert "memory" in hog.content
            # the worker survived (MemoryError was caught) or was replaced; either way the pool works
            if pool.replaced == 0:
                assert await inst.snapshot() == image
            other = await pool.create(hostile_path)
            assert not (await other.call_tool("get_book", {"book_id": 1})).is_error

    asyncio.run(run())


def test_tool_code_in_a_worker_cannot_see_the_hosts_secrets(
    hostile_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-secret")

    async def run() -> None:
        async with WorkerPool(1, call_timeout=5, memory_limit=None) as pool:
            inst = await pool.create(hostile_path)
            seen = await inst.call_tool("debug_environ", {})
            assert not seen.is_error, seen.content
            environ = seen.content["environ"]
            assert "OPENAI_API_KEY" not in environ and "AWS_SECRET_ACCESS_KEY" not in environ
            assert "host-secret" not in str(environ)
            # only the sandbox's harmless allowlist survives
            allowed = set(sandbox_env()) | {"AWM_INSIDE_SANDBOX"}
            assert set(environ) <= allowed, sorted(set(environ) - allowed)

    asyncio.run(run())


async def _exited(codes: Callable[[], list[int | None]], timeout: float = 10.0) -> list[int | None]:
    """The exit codes once every one is known (a killed process is reaped asynchronously)."""
    deadline = time.monotonic() + timeout
    while any(c is None for c in codes()) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return codes()


def test_worker_exitcodes_are_none_while_alive_and_negative_after_kill(hostile_path: Path) -> None:
    async def run() -> None:
        async with WorkerPool(2, call_timeout=5, memory_limit=None) as pool:
            inst = await pool.create(hostile_path)
            assert pool.worker_exitcodes == [None, None]
            pids = [w.pid for w in pool.workers]

            pool.kill()
            codes = await _exited(lambda: pool.worker_exitcodes)
            assert all(c is not None and c < 0 for c in codes), codes
            assert [w.pid for w in pool.workers] == pids  # killed, not replaced
            assert pool.replaced == 0
            with pytest.raises(PoolClosedError):
                await pool.create(hostile_path)
            after = await inst.call_tool("get_book", {"book_id": 1})
            assert after.is_error and after.error_type == "environment_error"
            assert pool.replaced == 0
        assert pool.worker_exitcodes == codes  # close() after kill() is fine

    asyncio.run(run())


def test_kill_is_safe_before_close_and_close_is_safe_after_kill(hostile_path: Path) -> None:
    async def run() -> None:
        pool = await WorkerPool(1, call_timeout=5, memory_limit=None, spare=True).start()
        pool.kill()
        pool.kill()  # idempotent
        await pool.close()
        codes = await _exited(lambda: pool.worker_exitcodes)
        assert len(codes) == 1 and codes[0] is not None and codes[0] < 0

    asyncio.run(run())


def test_instance_worker_exitcode_names_its_own_worker(hostile_path: Path) -> None:
    async def run() -> None:
        async with WorkerPool(2, call_timeout=5, memory_limit=None) as pool:
            victim = await pool.create(hostile_path)
            bystander = await pool.create(hostile_path)
            assert victim.worker_exitcode is None and bystander.worker_exitcode is None

            crashed = await victim.call_tool("debug_crash", {})  # os._exit(3) in the worker
            assert crashed.error_type == "environment_error"
            assert victim.worker_exitcode == 3
            assert bystander.worker_exitcode is None
            assert pool.worker_exitcodes == [None, None]  # its slot holds a replacement

            # the next call recreates it on a live worker
            assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error
            assert victim.worker_exitcode is None

            pool.kill()
            code = (await _exited(lambda: [bystander.worker_exitcode]))[0]
            assert code is not None and code < 0

    asyncio.run(run())
