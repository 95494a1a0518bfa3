"""EnvPool: acquire/release with reset, back-pressure, in-process and sandboxed."""

from __future__ import annotations

import asyncio

import pytest

from awm_envs import Environment, EnvPool


def test_release_resets_and_acquire_waits_when_all_are_busy(library_env: Environment) -> None:
    async def run() -> None:
        async with EnvPool(library_env, size=2) as pool:
            a, b = await pool.acquire_many(2)
            await a.call_tool("checkout_copy", {"copy_id": 4})
            waiter = asyncio.create_task(pool.acquire())
            await asyncio.sleep(0.05)
            assert not waiter.done()  # back-pressure
            await pool.release(a)
            c = await asyncio.wait_for(waiter, 5)
            assert c is a and c.snapshot_sync() == library_env.template  # reset on release
            await pool.release(b)
            await pool.release(c)

    asyncio.run(run())


def test_sandboxed_pool_context_manager(library_env: Environment) -> None:
    async def run() -> None:
        async with EnvPool(library_env.path, size=4, workers=2) as pool:
            assert pool.available == 4
            async with pool.instance() as inst:
                assert not (await inst.call_tool("checkout_copy", {"copy_id": 4})).is_error
            async with pool.instance() as inst:
                got = [await pool.acquire() for _ in range(3)]
                for i in [inst, *got]:
                    assert (await i.snapshot()) == library_env.template
                for i in got:
                    await pool.release(i)

    asyncio.run(run())


def test_unknown_backend_is_refused_with_the_choices(library_env: Environment) -> None:
    with pytest.raises(ValueError, match="'process'.*'ray'"):
        EnvPool(library_env, backend="dask")
