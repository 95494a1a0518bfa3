"""Drive a coroutine to completion from synchronous code.

Most tool calls never suspend (sync endpoint, sync dependencies), so their
coroutine can be stepped by hand: no event loop, no thread, ~1 µs. Calls that
may suspend (an ``async def`` endpoint awaiting something) go through a real
event loop: a per-thread one when this thread has none running, otherwise a
helper thread, so the sync API also works inside async programs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
_local = threading.local()
_helper: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


class WouldSuspend(RuntimeError):
    """A coroutine expected never to suspend tried to wait on something."""


def step(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that does not suspend; raise :class:`WouldSuspend` if it does."""
    try:
        while True:
            yielded = coro.send(None)
            if yielded is not None:  # a bare `yield` (sleep(0)) is fine; a future is not
                coro.throw(WouldSuspend("coroutine tried to suspend without an event loop"))
    except StopIteration as stop:
        value: T = stop.value
        return value


def _runner() -> asyncio.Runner:
    runner = getattr(_local, "runner", None)
    if runner is None:
        runner = asyncio.Runner()
        _local.runner = runner
    return runner


def run_sync(coro: Coroutine[Any, Any, T], *, may_suspend: bool = True) -> T:
    """Complete ``coro`` from sync code, with an event loop only when it may need one."""
    if not may_suspend:
        return step(coro)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _runner().run(coro)
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(max_workers=4, thread_name_prefix="awm-sync")
    return _helper.submit(lambda: _runner().run(coro)).result()
