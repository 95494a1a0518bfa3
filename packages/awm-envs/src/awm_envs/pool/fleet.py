"""``EnvFleet``: an :class:`EnvPool` for each environment in use, idle ones let go.

Why: a trainer or evaluator over AWM-1K draws tasks from hundreds of environments, a
few dozen at a time. Keeping a sandboxed pool for every environment ever touched
would hold hundreds of workers; starting one per episode would pay a worker start and
an app import each time. A fleet keeps a pool per environment while it is used and,
past ``max_environments`` pools, closes the one idle longest (no instance out) before
opening another. With ``template=True`` (the default when ``workers`` > 0) a new
pool's worker is forked from the pre-imported template, so bringing an evicted
environment back costs its app's import, not an interpreter.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from awm_envs.bundle.sources import resolve_env
from awm_envs.errors import PoolClosedError
from awm_envs.pool.envpool import EnvPool, PooledInstance


class _Entry:
    def __init__(self, pool: EnvPool) -> None:
        self.pool = pool
        self.out = 0  # instances handed out and not yet given back
        self.used = time.monotonic()


class EnvFleet:
    """Pools of instances for many environments, at most ``max_environments`` open at once.

    ``size``, ``workers`` and the rest are each pool's (see :class:`EnvPool`). When
    every open pool has an instance out and the limit is reached, :meth:`instance`
    waits for one to become idle: back-pressure, not unbounded growth.
    """

    def __init__(
        self,
        *,
        max_environments: int = 64,
        size: int = 8,
        workers: int = 1,
        template: bool | None = None,
        **pool_options: Any,
    ) -> None:
        if max_environments < 1:
            raise ValueError("a fleet needs room for at least one environment")
        self.max_environments = max_environments
        self.size = size
        self.workers = workers
        self.template = (workers > 0) if template is None else template
        self.pool_options = pool_options
        self.evicted = 0
        self.opened = 0
        self._entries: dict[str, _Entry] = {}
        self._opening: dict[str, asyncio.Future[_Entry]] = {}
        self._changed = asyncio.Condition()
        self._closed = False

    @property
    def open_environments(self) -> list[str]:
        """The bundle folders with a pool open now, least recently used first."""
        return [k for k, _ in sorted(self._entries.items(), key=lambda kv: kv[1].used)]

    async def _evict_one(self) -> bool:
        idle = [(e.used, key) for key, e in self._entries.items() if e.out == 0]
        if not idle:
            return False
        _, key = min(idle)
        entry = self._entries.pop(key)
        self.evicted += 1
        await entry.pool.close()
        return True

    async def _entry(self, env: str | Path) -> _Entry:
        key = str(resolve_env(env).resolve())
        mine = False
        async with self._changed:
            while True:
                if self._closed:
                    raise PoolClosedError("the fleet is closed")
                entry = self._entries.get(key)
                if entry is not None:
                    entry.out += 1
                    entry.used = time.monotonic()
                    return entry
                opening = self._opening.get(key)
                if opening is not None:
                    break
                if len(self._entries) + len(self._opening) < self.max_environments:
                    opening = asyncio.get_running_loop().create_future()
                    self._opening[key] = opening
                    mine = True
                    break
                if not await self._evict_one():
                    await self._changed.wait()  # every pool is busy: wait for a release
        if not mine:  # another caller is opening it: wait for that
            entry = await asyncio.shield(opening)
            async with self._changed:
                entry.out += 1
                entry.used = time.monotonic()
            return entry
        # this caller opens the pool (outside the lock: starting takes a while)
        try:
            pool = EnvPool(
                key,
                size=self.size,
                workers=self.workers,
                template=self.template,
                **self.pool_options,
            )
            await pool.start()
        except BaseException as exc:
            async with self._changed:
                self._opening.pop(key, None)
                opening.set_exception(exc)
                opening.exception()  # retrieved: waiters get it from their own await
                self._changed.notify_all()
            raise
        entry = _Entry(pool)
        async with self._changed:
            self._opening.pop(key, None)
            self.opened += 1
            entry.out += 1
            self._entries[key] = entry
            opening.set_result(entry)
            self._changed.notify_all()
        return entry

    @contextlib.asynccontextmanager
    async def instance(self, env: str | Path) -> AsyncIterator[PooledInstance]:
        """``async with fleet.instance("shop") as inst:`` a fresh instance of ``env``, reset on exit."""
        entry = await self._entry(env)
        try:
            async with entry.pool.instance() as inst:
                yield inst
        finally:
            async with self._changed:
                entry.out -= 1
                entry.used = time.monotonic()
                self._changed.notify_all()

    def pool(self, env: str | Path) -> FleetPool:
        """``env``'s view of the fleet: an :class:`~awm_core.session.InstancePool` whose
        instances come from (and count for) the fleet, for code written against one pool."""
        return FleetPool(self, env)

    async def close(self) -> None:
        """Close every pool."""
        async with self._changed:
            self._closed = True
            entries = list(self._entries.values())
            self._entries.clear()
            self._changed.notify_all()
        await asyncio.gather(*(e.pool.close() for e in entries), return_exceptions=True)

    async def __aenter__(self) -> EnvFleet:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class FleetPool:
    """One environment of an :class:`EnvFleet`, with a pool's ``instance()``."""

    def __init__(self, fleet: EnvFleet, env: str | Path) -> None:
        self.fleet = fleet
        self.env = env

    def instance(self) -> contextlib.AbstractAsyncContextManager[PooledInstance]:
        """``async with view.instance() as inst``: see :meth:`EnvFleet.instance`."""
        return self.fleet.instance(self.env)


__all__ = ["EnvFleet", "FleetPool"]
