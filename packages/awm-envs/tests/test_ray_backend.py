"""The Ray backend: EnvPool instances hosted by Ray actors on a real local Ray instance."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_envs import Environment, EnvPool

# Under `uv run`, Ray would package the working tree and start every worker through
# `uv run` (minutes on 2 cores); a local instance shares this venv. Read at ray's import.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip(
    "ray",
    reason="the Ray backend needs ray: uv pip install 'ray>=2.40,<3' (the awm-envs[ray] extra)",
)

from awm_envs.pool.ray_backend import RayWorkerPool  # noqa: E402

pytestmark = pytest.mark.slow  # a local Ray instance takes seconds to start


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    """A local Ray instance with two CPUs (one per actor), shut down after this module."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_pool_on_ray_spreads_instances_and_resets_on_release(
    local_ray: Any, library_env: Environment
) -> None:
    async def run() -> None:
        async with EnvPool(library_env, size=4, workers=2, backend="ray") as pool:
            assert isinstance(pool.worker_pool, RayWorkerPool)
            stats = pool.worker_pool.stats()["workers"]
            assert [w["instances"] for w in stats] == [2, 2]  # balanced over the two actors
            assert len({w["pid"] for w in stats}) == 2 and all(w["node_id"] for w in stats)
            a, b = await pool.acquire_many(2)
            assert not (await a.call_tool("checkout_copy", {"copy_id": 4})).is_error
            assert (await a.call_tool("checkout_copy", {"copy_id": 4})).is_error  # state kept
            assert not (await b.call_tool("checkout_copy", {"copy_id": 4})).is_error  # isolated
            bad = await a.call_tool("checkout_copy", {"copy_id": "x"})
            assert bad.is_error and bad.error_type == "invalid_arguments"
            assert {t.name for t in await a.list_tools()} == {t.name for t in library_env.tools}
            await pool.release(a)
            await pool.release(b)
            for _ in range(4):  # every instance comes back reset to the template
                inst = await pool.acquire()
                assert await inst.snapshot() == library_env.template
                await pool.release(inst)

    asyncio.run(run())


def test_ray_pool_defaults_to_one_actor_per_cluster_cpu(
    local_ray: Any, library_env: Environment
) -> None:
    async def run() -> None:
        async with EnvPool(library_env.path, size=3, backend="ray") as pool:
            assert len(pool.worker_pool.workers) == 2  # num_cpus=2
            async with pool.instance() as inst:
                assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error

    asyncio.run(run())


def test_hang_and_crash_cost_one_actor_on_ray(local_ray: Any, hostile_path: Path) -> None:
    async def run() -> None:
        async with RayWorkerPool(2, call_timeout=2.0) as pool:
            victim = await pool.create(hostile_path)
            bystander = await pool.create(hostile_path)
            assert victim.worker is not bystander.worker
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error
            image = await bystander.snapshot()

            hung = await victim.call_tool("debug_hang", {})
            assert hung.is_error and hung.error_type == "environment_error"
            assert "did not finish" in hung.content and pool.replaced == 1
            assert "reset to its initial state" in hung.content
            # recreated from the template on a live actor by its next call: no reset() needed
            assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error

            crashed = await victim.call_tool("debug_crash", {})
            assert crashed.error_type == "environment_error" and "crashed" in crashed.content
            assert pool.replaced == 2

            assert await bystander.snapshot() == image  # the other actor never noticed
            assert not (await bystander.call_tool("get_book", {"book_id": 2})).is_error

    asyncio.run(run())
