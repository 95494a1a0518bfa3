"""Sync callers, async environments: one event loop thread per process, shared pools.

SkyRL-gym and OpenEnv call ``step`` synchronously (sometimes from worker
threads); awm's pools and instances live on an event loop. :func:`run_sync`
runs a coroutine on a process-wide loop thread and waits for it, and
:func:`shared_env` keeps one started :class:`~awm_verify.TaskEnv` per
environment and settings per loop, so episodes share a pool instead of each
starting its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from awm_verify.gym import TaskEnv

__all__ = ["run_sync", "shared_env"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_envs: dict[tuple[int, str], TaskEnv] = {}
_env_locks: dict[int, asyncio.Lock] = {}


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="awm-env-loop", daemon=True).start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
    """Run ``coro`` on the process's awm loop thread and return its result."""
    loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # pragma: no cover - a sync call from inside the loop would deadlock
        coro.close()
        raise RuntimeError("run_sync called from the awm loop thread; await the coroutine instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


async def shared_env(env: str, **settings: Any) -> TaskEnv:
    """The started :class:`TaskEnv` for ``env`` and ``settings`` on the running loop."""
    loop = asyncio.get_running_loop()
    key = (id(loop), repr((env, sorted(settings.items()))))
    lock = _env_locks.setdefault(id(loop), asyncio.Lock())
    async with lock:
        if key not in _envs:
            _envs[key] = await TaskEnv(env, **settings).start()
        return _envs[key]
