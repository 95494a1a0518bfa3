"""Environment workers forked from one pre-imported sandboxed template (``template=True``).

They share the template's sandbox, so each is confined against its siblings: these tests
drive a deliberately hostile bundle in one worker against a bystander in another, and
check that a crash, a hang, a memory hog and a left-behind daemon cost only the worker
that caused them, as they do for workers started on their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from test_worker_sandbox import _bundle

from awm_envs import EnvPool
from awm_envs.pool.remote import WorkerPool
from awm_envs.pool.worker_template import ForkedWorker
from awm_envs.sandbox import GIB

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def probe_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bundle(tmp_path_factory.mktemp("template"), "template_probe")


def _content(result: object) -> dict:
    content = getattr(result, "content", None)
    return content if isinstance(content, dict) else json.loads(str(content))


def test_workers_are_forked_and_serve_like_started_ones(probe_path: Path) -> None:
    async def run() -> None:
        async with WorkerPool(2, template=True) as pool:
            assert all(isinstance(w.proc, ForkedWorker) for w in pool.workers)
            assert len({w.proc.pid for w in pool.workers}) == 2
            a = await pool.create(probe_path)
            b = await pool.create(probe_path)
            assert not (await a.call_tool("checkout_copy", {"copy_id": 4})).is_error
            # b is another instance: it sees its own database, not a's change
            assert not (await b.call_tool("checkout_copy", {"copy_id": 4})).is_error

    asyncio.run(run())


def test_a_crash_costs_only_its_worker_and_a_fork_replaces_it(probe_path: Path) -> None:
    async def run() -> None:
        async with (
            EnvPool(probe_path, size=1, workers=1, template=True) as victim,
            EnvPool(probe_path, size=1, workers=1, template=True) as bystander,
        ):
            before = victim.worker_pool.workers[0].proc.pid
            async with victim.instance() as inst:
                crashed = await inst.call_tool("debug_crash", {})
                assert crashed.is_error and "crashed the environment worker" in str(crashed.content)
                assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error
            after = victim.worker_pool.workers[0]
            assert after.proc.pid != before and isinstance(after.proc, ForkedWorker)
            async with bystander.instance() as other:
                assert not (await other.call_tool("get_book", {"book_id": 2})).is_error

    asyncio.run(run())


def test_a_worker_cannot_signal_or_read_a_sibling(probe_path: Path) -> None:
    async def run() -> None:
        async with (
            EnvPool(probe_path, size=1, workers=1, template=True) as attacker,
            EnvPool(probe_path, size=1, workers=1, template=True) as bystander,
        ):
            target = bystander.worker_pool.workers[0].proc
            assert isinstance(target, ForkedWorker)
            inner = target.inner_pid
            async with attacker.instance() as inst:
                killed = _content(
                    await inst.call_tool("probe_system", {"command": f"kill -9 {inner}"})
                )
                assert killed["status"] != 0, "a tool signalled a sibling worker"
                for secret in ("environ", "mem", "maps"):
                    seen = _content(
                        await inst.call_tool("probe_read", {"path": f"/proc/{inner}/{secret}"})
                    )
                    assert "read" not in seen or not seen["read"], (
                        f"a tool read a sibling's {secret}"
                    )
            async with bystander.instance() as other:
                assert not (await other.call_tool("get_book", {"book_id": 1})).is_error
            assert target.alive()

    asyncio.run(run())


def test_a_hang_and_a_memory_hog_are_stopped_and_replaced(probe_path: Path) -> None:
    async def run() -> None:
        async with (
            EnvPool(
                probe_path,
                size=1,
                workers=1,
                template=True,
                call_timeout=2.0,
                memory_limit=GIB // 4,
            ) as pool,
            pool.instance() as inst,
        ):
            hung = await inst.call_tool("debug_hang", {"seconds": 60})
            assert hung.is_error
            assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error
            hog = await inst.call_tool("debug_hog", {"megabytes": 1024})
            assert hog.is_error
            assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error

    asyncio.run(run())


def test_what_a_tool_leaves_running_ends_with_its_worker(probe_path: Path) -> None:
    token = "7313.25"  # a sleep length no other process uses: how the test finds them

    def sleepers() -> list[int]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        found.append(int(pid))
            except OSError:
                continue
        return found

    async def run() -> None:
        async with EnvPool(probe_path, size=1, workers=1, template=True) as pool:
            async with pool.instance() as inst:
                assert not (await inst.call_tool("probe_detach", {"token": token})).is_error
                crashed = await inst.call_tool("debug_crash", {})
                assert crashed.is_error
                assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error
            deadline = time.monotonic() + 10
            while sleepers() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                pool.worker_pool.workers[0].proc.alive()  # a request: the template sweeps
            assert not sleepers(), "a daemon a tool left behind outlived its worker"

    asyncio.run(run())
