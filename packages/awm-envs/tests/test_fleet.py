"""``EnvFleet`` keeps pools for the environments in use and lets the idle ones go."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from awm_envs import EnvFleet
from awm_envs.bundle.sources import CATALOG_DIR
from awm_envs.errors import PoolClosedError

CALL = ("list_my_orders", {})


def _copies(tmp_path: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        target = tmp_path / f"shop_{i}"
        shutil.copytree(CATALOG_DIR / "shop", target)
        out.append(target)
    return out


def test_idle_pools_are_evicted_least_recently_used_first(tmp_path: Path) -> None:
    a, b, c = _copies(tmp_path, 3)

    async def run() -> None:
        async with EnvFleet(max_environments=2, size=2, workers=0) as fleet:
            for env in (a, b, a):  # a is used last: b is the idle one longest
                async with fleet.instance(env) as inst:
                    assert not (await inst.call_tool(*CALL)).is_error
            async with fleet.instance(c) as inst:
                assert not (await inst.call_tool(*CALL)).is_error
            assert fleet.open_environments == [str(a.resolve()), str(c.resolve())]
            assert (fleet.opened, fleet.evicted) == (3, 1)

    asyncio.run(run())


def test_a_busy_pool_is_never_evicted_the_next_caller_waits(tmp_path: Path) -> None:
    a, b = _copies(tmp_path, 2)

    async def run() -> None:
        async with EnvFleet(max_environments=1, size=1, workers=0) as fleet:
            order: list[str] = []
            held = asyncio.Event()

            async def hold_a() -> None:
                async with fleet.instance(a) as inst:
                    held.set()
                    await asyncio.sleep(0.2)
                    assert not (await inst.call_tool(*CALL)).is_error  # not closed under us
                    order.append("a done")

            async def then_b() -> None:
                await held.wait()
                async with fleet.instance(b) as inst:
                    order.append("b started")
                    assert not (await inst.call_tool(*CALL)).is_error

            await asyncio.gather(hold_a(), then_b())
            assert order == ["a done", "b started"]
            assert fleet.evicted == 1

    asyncio.run(run())


def test_concurrent_first_uses_open_one_pool(tmp_path: Path) -> None:
    (a,) = _copies(tmp_path, 1)

    async def run() -> None:
        async with EnvFleet(max_environments=4, size=4, workers=0) as fleet:

            async def use() -> None:
                async with fleet.instance(a) as inst:
                    assert not (await inst.call_tool(*CALL)).is_error

            await asyncio.gather(*(use() for _ in range(4)))
            assert fleet.opened == 1

    asyncio.run(run())


def test_sandboxed_fleet_forks_workers_from_the_template(tmp_path: Path) -> None:
    a, b = _copies(tmp_path, 2)

    async def run() -> None:
        async with EnvFleet(max_environments=1, size=1, workers=1) as fleet:
            assert fleet.template
            for env in (a, b, a):
                async with fleet.instance(env) as inst:
                    assert not (await inst.call_tool(*CALL)).is_error
            assert fleet.evicted == 2
        with pytest.raises(PoolClosedError):
            async with fleet.instance(a):
                pass

    asyncio.run(run())
