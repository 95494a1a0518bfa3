"""256 instances driven concurrently end exactly where replaying each alone ends."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from awm_envs import Environment
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
