"""A slow synchronous tool must not stall every other session of an in-process server.

Sync tools run inline on the event loop (a thread hop would double a
sub-millisecond call). Once a tool's recent calls took longer than
``OFFLOAD_AFTER_S`` (a moving average: one call of five times the limit is
enough), the async form runs it in a thread from then on, still one call at a time per
instance, so the MCP server's other sessions keep being answered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hostile import make_hostile_bundle

from awm_envs import Environment, load_environment
from awm_envs.runtime.instance import OFFLOAD_AFTER_S


@pytest.fixture
def slow_env(tmp_path: Path) -> Environment:
    # Its own bundle folder: its own plans, so the "slow" marks stay in this test.
    return load_environment(make_hostile_bundle(tmp_path, env_id="slow_library"))


async def test_a_slow_sync_tool_runs_off_the_event_loop_after_its_first_slow_call(
    slow_env: Environment,
) -> None:
    a, b = slow_env.instance(), slow_env.instance()
    try:
        first = await a.call_tool("debug_hang", {"seconds": 6 * OFFLOAD_AFTER_S})
        assert not first.is_error and slow_env.plans["debug_hang"].offload

        slow = asyncio.create_task(a.call_tool("debug_hang", {"seconds": 3.0}))
        await asyncio.sleep(0.05)  # the slow call is running now
        other = await b.call_tool("get_book", {"book_id": 3})
        # the other instance's answer came while the slow call was still running: it did not
        # queue behind it (an ordering, so no stopwatch bound that a busy runner could break)
        assert not other.is_error and not slow.done()
        assert not (await slow).is_error
    finally:
        a.close_sync()
        b.close_sync()


async def test_calls_on_one_instance_still_run_one_at_a_time(slow_env: Environment) -> None:
    slow_env.plans["debug_hang"].offload = True
    a, b = slow_env.instance(), slow_env.instance()
    try:
        slow = asyncio.create_task(a.call_tool("debug_hang", {"seconds": 0.5}))
        await asyncio.sleep(0.05)
        # A fast write on the busy instance waits for its turn, without blocking the loop.
        write = asyncio.create_task(a.call_tool("checkout_copy", {"copy_id": 4}))
        other = await b.call_tool("get_book", {"book_id": 3})
        assert not other.is_error and not write.done() and not slow.done()
        checkout = await write
        assert slow.done() and not checkout.is_error
        assert a.query_sync("SELECT status FROM copies WHERE copy_id = 4") == [("on_loan",)]
        assert b.query_sync("SELECT status FROM copies WHERE copy_id = 4") == [("available",)]
    finally:
        a.close_sync()
        b.close_sync()


async def test_fast_tools_stay_inline_and_one_stalled_call_does_not_mark_a_tool(
    slow_env: Environment,
) -> None:
    with slow_env.instance() as inst:
        for _ in range(20):
            assert not (await inst.call_tool("get_book", {"book_id": 3})).is_error
        assert not slow_env.plans["get_book"].offload
        # One call twice the limit (as a call stalled by the OS would be) is not enough.
        await inst.call_tool("debug_hang", {"seconds": 2 * OFFLOAD_AFTER_S})
        assert not slow_env.plans["debug_hang"].offload
