"""The HTTP server's limits: a session cap that evicts idle sessions, and a per-address rate limit."""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from awm_envs.serve.logs import logger, throttle
from awm_envs.serve.sessions import InstanceDirectory


class RateLimiter:
    """A token bucket per client address: ``rate`` requests/s on average, bursts up to ``burst``.

    O(1) per request; :meth:`prune` (called by the housekeeping task) forgets
    addresses whose bucket has refilled, so the table does not grow with
    every address ever seen.
    """

    def __init__(self, rate: float, burst: float | None = None) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError("rate must be a positive number of requests per second")
        self.rate = rate
        self.burst = burst if burst is not None else max(1.0, rate)
        self._buckets: dict[str, list[float]] = {}  # address -> [tokens, when]
        self.refused = 0

    def check(self, address: str) -> float:
        """0 if a request from ``address`` may go ahead (it takes a token), else seconds until one may."""
        now = time.monotonic()
        bucket = self._buckets.get(address)
        if bucket is None:
            self._buckets[address] = [self.burst - 1.0, now]
            return 0.0
        tokens = min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        self.refused += 1
        return (1.0 - tokens) / self.rate

    def prune(self) -> None:
        now = time.monotonic()
        full = [
            a
            for a, (t, when) in self._buckets.items()
            if t + (now - when) * self.rate >= self.burst
        ]
        for address in full:
            del self._buckets[address]

    def __len__(self) -> int:
        return len(self._buckets)


# set by the router around a request that may open a session, read where the SDK admits it
OPENING: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "awm_opening", default=None
)
_GONE_MEMORY = 10_000  # ids of evicted/expired sessions remembered, to tell their clients why


class SessionLimits:
    """The session cap: the SDK's sessions in least-recently-used order, with the requests in flight.

    At the cap, a new session takes the place of the least recently used
    *idle* session (no request in flight, not being opened): its transport
    ends, its instance is closed, and its id is remembered so that its next
    request is told it was evicted. When every session is busy the new client
    is refused. The bookkeeping per request is O(1): a counter and an
    ``OrderedDict.move_to_end``; only an eviction walks the order, skipping
    the busy sessions.

    It hooks the SDK's session admission (``_admit_session``), which runs
    under the SDK's lock, so the cap holds under concurrent handshakes. With
    an SDK without that hook it switches itself off (``enabled``) and the
    SDK's own cap applies: new clients are refused, nothing is evicted.
    """

    def __init__(
        self,
        manager: Any,
        directory: InstanceDirectory,
        max_sessions: int | None,
        idle_timeout: float | None,
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.directory = directory
        self._sessions: dict[str, Any] = getattr(manager, "_server_instances", None)  # type: ignore[assignment]
        self._owners: dict[str, Any] = getattr(manager, "_session_owners", {})
        admit = getattr(manager, "_admit_session", None)
        self.enabled = isinstance(self._sessions, dict) and callable(admit)
        self._lru: OrderedDict[str, None] = OrderedDict()
        self._busy: dict[str, int] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.evictions = 0
        self.refusals = 0
        if self.enabled:
            self._sdk_admit: Callable[[Any], Any] = admit  # type: ignore[assignment]
            manager._admit_session = self._admit_session
        elif max_sessions is not None:
            logger.warning(
                "this mcp SDK has no session admission hook: at --max-sessions new clients are "
                "refused instead of evicting idle sessions"
            )

    def __len__(self) -> int:
        return len(self._sessions) if self.enabled else 0

    def full(self) -> bool:
        return self.max_sessions is not None and len(self._sessions) >= self.max_sessions

    def _admit_session(self, requestor: Any) -> Any:
        """The SDK's admission, after making room; the new session counts as busy until opened."""
        if self.full() and not self.evict_idle():
            self.refusals += 1
            return None
        transport = self._sdk_admit(requestor)
        session_id = getattr(transport, "mcp_session_id", None)
        if session_id is not None:
            self._lru[session_id] = None
            opening = OPENING.get()
            if opening is not None:
                opening.append(session_id)
                self._busy[session_id] = self._busy.get(session_id, 0) + 1
        return transport

    def begin(self, session_id: str) -> bool:
        """A request for ``session_id`` starts; True if it is a live session (then call :meth:`end`)."""
        if session_id not in self._sessions:
            return False
        self._busy[session_id] = self._busy.get(session_id, 0) + 1
        if session_id in self._lru:
            self._lru.move_to_end(session_id)
        return True

    def end(self, session_id: str) -> None:
        left = self._busy.get(session_id, 1) - 1
        if left > 0:
            self._busy[session_id] = left
        else:
            self._busy.pop(session_id, None)
        if session_id in self._lru:
            self._lru.move_to_end(session_id)

    def gone(self, session_id: str) -> str | None:
        """Why a session that is no more was ended by the server ("evicted", "expired"), if it was."""
        return self._gone.get(session_id)

    def closed(self, session_id: str) -> None:
        """The client ended its session (DELETE)."""
        self._lru.pop(session_id, None)

    def _remember(self, session_id: str, reason: str) -> None:
        self._lru.pop(session_id, None)
        self._gone[session_id] = reason
        if len(self._gone) > _GONE_MEMORY:
            self._gone.popitem(last=False)

    def evict_idle(self) -> bool:
        """End the least recently used idle session; False if every session is busy."""
        if len(self._busy) >= len(self._sessions):
            return False
        stale: list[str] = []
        victim = None
        for session_id in self._lru:
            transport = self._sessions.get(session_id)
            if transport is None:
                stale.append(session_id)  # ended on its own (idle timeout, crash)
            elif session_id not in self._busy and not getattr(transport, "_requests_in_flight", 0):
                victim = session_id, transport
                break
        for session_id in stale:
            self._remember(session_id, "expired")
        if victim is None:
            return False
        self._evict(*victim)
        return True

    def _evict(self, session_id: str, transport: Any) -> None:
        # forgotten before any await, like the SDK's own discard: from now on the id answers 404
        self._sessions.pop(session_id, None)
        self._owners.pop(session_id, None)
        self._remember(session_id, "evicted")
        idle_scope = getattr(transport, "idle_scope", None)
        if idle_scope is not None:
            idle_scope.cancel()  # ends the session's task, which terminates its transport
        else:
            self._spawn(transport.terminate())
        key = f"s:{session_id}"
        if key in self.directory:
            self._spawn(self.directory.close(key))
        self.evictions += 1
        throttle.warning(
            "evict",
            f"{len(self._sessions) + 1} sessions open, the cap (--max-sessions {self.max_sessions}): "
            f"evicted the least recently used idle session ({self.evictions} evictions so far)",
        )

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def prune(self) -> None:
        """Forget sessions the SDK ended on its own (idle timeout): O(sessions), from housekeeping."""
        if not self.enabled:
            return
        for session_id in [s for s in self._lru if s not in self._sessions]:
            self._remember(session_id, "expired")

    async def drain(self) -> None:
        """Wait for the closes that evictions started (at shutdown)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def gone_message(self, session_id: str, reason: str) -> str:
        if reason == "evicted":
            return (
                f"Session {session_id[:64]} was evicted: the server reached its session cap "
                f"(--max-sessions {self.max_sessions}) and closed its least recently used idle "
                "session. Initialize a new session."
            )
        return (
            f"Session {session_id[:64]} expired: it had no request for longer than the idle timeout "
            f"(--idle-timeout {self.idle_timeout:g} s). Initialize a new session."
        )

    def busy_message(self) -> str:
        return (
            f"Too many open sessions: all {self.max_sessions} sessions (the cap, --max-sessions) "
            "are busy with a request in flight, so none could be evicted to make room. Retry "
            "later, or start the server with a higher --max-sessions."
        )
