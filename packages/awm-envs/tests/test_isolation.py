"""256 instances driven concurrently end exactly where replaying each alone ends."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import mcp
import pytest
from netutil import http_server

from awm_envs import Environment, EnvPool
from awm_envs.pool.remote import WorkerPool


def _script(seed: int) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    steps: list[tuple[str, dict[str, Any]]] = []
    for _ in range(rng.randint(2, 6)):
        kind = rng.random()
        if kind < 0.35:
            steps.append(("checkout_copy", {"copy_id": rng.randint(1, 8)}))
        elif kind < 0.5:
            steps.append(("return_loan", {"loan_id": rng.randint(1, 6)}))
        elif kind < 0.75:
            steps.append(
                (
                    "add_review",
                    {"book_id": rng.randint(1, 6), "rating": rng.randint(1, 5), "body": f"r{seed}"},
                )
            )
        elif kind < 0.85:
            steps.append(("delete_review", {"review_id": rng.randint(1, 4)}))
        else:
            steps.append(("search_books", {"q": rng.choice(["the", "of", "s"]), "limit": 2}))
    return steps


def test_concurrent_instances_match_isolated_replays(library_env: Environment) -> None:
    n = 256

    async def run() -> tuple[list[bytes], list[list[Any]]]:
        async with WorkerPool(2, call_timeout=30) as pool:
            insts = await asyncio.gather(*(pool.create(library_env.path) for _ in range(n)))

            async def drive(i: int) -> list[Any]:
                out = []
                for tool, args in _script(i):
                    r = await insts[i].call_tool(tool, args)
                    out.append((r.is_error, r.error_type, r.content))
                    await asyncio.sleep(0)  # interleave with the other instances
                return out

            results = await asyncio.gather(*(drive(i) for i in range(n)))
            images = [await inst.snapshot() for inst in insts]
            return images, results

    images, results = asyncio.run(run())
    assert len(set(images)) > 10  # the scripts really diverged
    for i in range(n):
        with library_env.instance() as alone:
            replay = []
            for tool, args in _script(i):
                r = alone.call_tool_sync(tool, args)
                replay.append((r.is_error, r.error_type, r.content))
            assert replay == results[i], f"instance {i} saw different results"
            assert alone.snapshot_sync() == images[i], f"instance {i} ended in a different state"


def replay_steps(env: Environment, seed: int) -> tuple[list[Any], bytes]:
    """What script ``seed`` gives on a fresh instance of its own: the serial truth."""
    with env.instance() as alone:
        out = []
        for tool, args in _script(seed):
            r = alone.call_tool_sync(tool, args)
            out.append((r.is_error, r.error_type, r.content))
        return out, alone.snapshot_sync()


@pytest.mark.parametrize("workers", [0, 2])
def test_envpool_rollouts_with_reused_instances_match_serial_replays(
    library_env: Environment, workers: int
) -> None:
    """48 different rollouts through 6 recycled instances: each starts clean and ends as alone."""
    n, size = 48, 6

    async def run() -> list[tuple[list[Any], bytes]]:
        async with EnvPool(library_env, size=size, workers=workers, call_timeout=30) as pool:

            async def rollout(i: int) -> tuple[list[Any], bytes]:
                async with pool.instance() as inst:
                    out = []
                    for tool, args in _script(i):
                        r = await inst.call_tool(tool, args)
                        out.append((r.is_error, r.error_type, r.content))
                        await asyncio.sleep(0)
                    return out, await inst.snapshot()

            return list(await asyncio.gather(*(rollout(i) for i in range(n))))

    results = asyncio.run(run())
    assert len({image for _, image in results}) > 10  # the rollouts really diverged
    for i, got in enumerate(results):
        assert got == replay_steps(library_env, i), f"rollout {i} differs from its serial replay"


def test_mcp_sessions_with_distinct_scripts_match_serial_replays(library_env: Environment) -> None:
    """24 MCP clients over streamable HTTP at once, each its own script, each as if alone."""
    n = 24

    async def run() -> list[list[Any]]:
        async with http_server(library_env) as (url, _directory):

            async def session(i: int) -> list[Any]:
                async with mcp.Client(f"{url}/i/rollout-{i}") as client:
                    out = []
                    for tool, args in _script(i):
                        r = await client.call_tool(tool, args)
                        out.append((r.is_error, r.structured_content, r.content[0].text))
                    return out

            return list(await asyncio.gather(*(session(i) for i in range(n))))

    over_mcp = asyncio.run(run())
    for i in range(n):
        replay, _ = replay_steps(library_env, i)
        assert [e for e, _, _ in over_mcp[i]] == [e for e, _, _ in replay], f"session {i}"
        for (is_error, structured, text), (_, _, content) in zip(over_mcp[i], replay, strict=True):
            if is_error:
                assert text.strip(), f"session {i}: an error without a message"
            else:
                assert structured == content, f"session {i} saw another session's data"
