"""The instances behind an MCP server, one per session key, closed when idle.

Keys: ``s:{mcp-session-id}`` for an HTTP session, ``i:{id}`` for an explicit
``/mcp/i/{id}`` instance, ``stdio`` for the one stdio client, ``r:...`` for a
sessionless request (a fresh instance that lives for that request). Instances
idle longer than ``idle_timeout`` are closed by a reaper task: clients that
vanish without closing their session do not leak databases.

With ``shared=True`` (``awm envs serve --shared-instance``) every session key and
every sessionless request maps to one instance, ``shared``, which closing a
session does not close: for clients that open a new MCP session per call (the
official AWM client does), whose writes would otherwise vanish between calls.
Explicit ``/mcp/i/{id}`` instances stay separate.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

INSTANCE_SCOPE_KEY = "awm.instance_id"  # the ASGI scope key naming an explicit instance
DEFAULT_IDLE_TIMEOUT_S = 1800.0
SHARED_KEY = "shared"


@dataclass
class _Entry:
    instance: Any
    last_used: float


class InstanceDirectory:
    """Instances by key (session id, explicit id, ``stdio``), created on first use, reaped when idle."""

    def __init__(
        self,
        factory: Callable[[str], Awaitable[Any]],
        idle_timeout: float,
        *,
        shared: bool = False,
    ) -> None:
        self._factory = factory
        self.shared = shared
        self.idle_timeout = idle_timeout
        self._entries: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.created = 0
        self.reaped = 0

    def resolve(self, key: str) -> str:
        """The key an instance is kept under: ``shared`` for every non-explicit key in shared mode."""
        if self.shared and not key.startswith("i:"):
            return SHARED_KEY
        return key

    async def get(self, key: str) -> Any:
        key = self.resolve(key)
        entry = self._entries.get(key)
        if entry is None:
            lock = self._locks.setdefault(key, asyncio.Lock())
            async with lock:
                entry = self._entries.get(key)
                if entry is None:
                    entry = _Entry(await self._factory(key), time.monotonic())
                    self._entries[key] = entry
                    self.created += 1
        entry.last_used = time.monotonic()
        return entry.instance

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    async def close(self, key: str) -> None:
        if self.resolve(key) != key:
            return  # a session (or request) ended; the shared instance outlives it
        entry = self._entries.pop(key, None)
        self._locks.pop(key, None)
        if entry is not None:
            result = entry.instance.close()
            if inspect.isawaitable(result):
                await result

    async def reap_once(self) -> int:
        """Close instances idle longer than ``idle_timeout`` (0: never); return how many."""
        if not self.idle_timeout > 0:
            return 0
        now = time.monotonic()
        stale = [k for k, e in self._entries.items() if now - e.last_used > self.idle_timeout]
        for key in stale:
            await self.close(key)
        self.reaped += len(stale)
        return len(stale)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(self.idle_timeout / 4, 30.0)) if self.idle_timeout > 0 else 30.0
        while True:
            await asyncio.sleep(interval)
            await self.reap_once()

    async def close_all(self) -> None:
        for key in list(self._entries):
            await self.close(key)
