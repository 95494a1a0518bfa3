"""One isolated environment instance: its own in-memory SQLite database, nothing else.

Creating an instance restores the environment's template image with
``Connection.deserialize`` (no SQL re-executed); ``reset()`` deserializes it
again into the same connection (~10 µs). Every tool call runs inside one
outer transaction on that connection: the tool's own ``commit()`` calls only
release savepoints, so a call that fails at any point is rolled back as a
whole and never changes the database.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any

from awm_core.argcheck import check_arguments
from awm_core.models import ToolResult, ToolSpec
from awm_envs.errors import InstanceClosedError
from awm_envs.runtime.dispatch import SESSION, ToolFailure, classify
from awm_envs.runtime.results import error_result
from awm_envs.runtime.syncbridge import run_sync, step

if TYPE_CHECKING:
    from awm_envs.runtime.environment import Environment

# A sync tool whose recent calls took longer than this (a moving average, so that one
# call stalled by the OS or the garbage collector does not count) is marked slow: the async
# form (call_tool, what the MCP server awaits) then runs it in a thread. Fast calls stay
# inline: a thread hop would double the cost of a sub-millisecond call.
OFFLOAD_AFTER_S = 0.05
_EMA_WEIGHT = 0.2  # of the newest call: one call of 5x the limit marks a tool at once


class Instance:
    """An isolated in-process instance (implements :class:`awm_core.session.EnvInstance`).

    The instance API is the same as :class:`~awm_envs.pool.host.RemoteInstance`'s:
    every method (``call_tool``, ``list_tools``, ``snapshot``, ``restore``,
    ``reset``, ``query``, ``close``) is async, and each has a ``*_sync`` twin
    (``call_tool_sync``, ``snapshot_sync``, ...) running the same code without an
    event loop. Use one instance from one thread or one event loop at a time.
    """

    def __init__(self, env: Environment, instance_id: str | None = None) -> None:
        self.env = env
        self.id = instance_id or secrets.token_hex(6)
        self._raw, self._proxy, self._sa = env.open_connection()
        self._lock = threading.Lock()
        self._alock: asyncio.Lock | None = None
        self.closed = False
        self.calls = 0

    # -- the EnvSession protocol -------------------------------------------------------
    async def list_tools(self) -> list[ToolSpec]:
        """The environment's tools with their input schemas."""
        return self.env.tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Run one tool; every failure is an error result, and a failed call changes nothing."""
        started = time.perf_counter()
        prepared = self._prepare(name, arguments, started)
        if isinstance(prepared, ToolResult):
            return prepared
        plan = self.env.plans[name]
        if not plan.may_suspend:  # runs to completion without yielding: no await
            if (
                not plan.offload
                and (self._alock is None or not self._alock.locked())
                and self._lock.acquire(blocking=False)
            ):
                try:
                    result = step(self._execute(name, prepared, started))
                finally:
                    self._lock.release()
                recent = plan.recent_s + _EMA_WEIGHT * (result.latency_s - plan.recent_s)
                plan.recent_s = recent
                if recent > OFFLOAD_AFTER_S:
                    plan.offload = True
                return result
            # A known-slow tool, or this instance is busy (a call in a thread or suspended):
            # wait for it without blocking the event loop, then run in a thread.
            if self._alock is None:
                self._alock = asyncio.Lock()
            async with self._alock:
                return await asyncio.to_thread(self._execute_locked, name, prepared, started)
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            return await self._execute(name, prepared, started)

    # -- sync forms --------------------------------------------------------------------
    def list_tools_sync(self) -> list[ToolSpec]:
        """Sync form of :meth:`list_tools`."""
        return self.env.tools

    def call_tool_sync(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Sync form of :meth:`call_tool`; needs no event loop for sync endpoints."""
        started = time.perf_counter()
        prepared = self._prepare(name, arguments, started)
        if isinstance(prepared, ToolResult):
            return prepared
        plan = self.env.plans[name]
        with self._lock:
            return run_sync(self._execute(name, prepared, started), may_suspend=plan.may_suspend)

    # -- state -------------------------------------------------------------------------
    # One rule for every instance class (Instance, RemoteInstance): each method is async,
    # and each has a ``*_sync`` twin for code without an event loop (docs/environment-format.md).
    async def snapshot(self) -> bytes:
        """The database as bytes (a complete SQLite image; open it with ``deserialize``)."""
        return self.snapshot_sync()

    async def restore(self, image: bytes) -> None:
        """Replace the database with ``image`` (from :meth:`snapshot` or the template)."""
        self.restore_sync(image)

    async def reset(self) -> None:
        """Back to the environment's initial database (~10 µs: one ``deserialize``)."""
        self.reset_sync()

    async def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read-only SQL against this instance (for tests, verifiers and debugging)."""
        return self.query_sync(sql, params)

    async def close(self) -> None:
        """Release the database; the instance cannot be used afterwards."""
        self.close_sync()

    def snapshot_sync(self) -> bytes:
        """Sync form of :meth:`snapshot`."""
        self._check_open()
        with self._lock:
            return self._raw.serialize()

    def restore_sync(self, image: bytes) -> None:
        """Sync form of :meth:`restore`."""
        self._check_open()
        with self._lock:
            self._raw.deserialize(image)
            self._raw.execute("PRAGMA foreign_keys = ON")

    def reset_sync(self) -> None:
        """Sync form of :meth:`reset`."""
        self.restore_sync(self.env.template)

    def query_sync(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Sync form of :meth:`query`."""
        self._check_open()
        with self._lock:
            return self._raw.execute(sql, params).fetchall()

    def close_sync(self) -> None:
        """Sync form of :meth:`close`."""
        if self.closed:
            return
        self.closed = True
        with self._lock:
            self._sa.close()  # NullPool closes the raw connection too
            self._raw.close()

    async def __aenter__(self) -> Instance:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close_sync()

    def __enter__(self) -> Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()

    def __repr__(self) -> str:
        return f"Instance({self.env.id!r}, id={self.id!r}{', closed' if self.closed else ''})"

    # -- internals ---------------------------------------------------------------------
    def _execute_locked(self, name: str, args: dict[str, Any], started: float) -> ToolResult:
        """Run a call that never suspends, holding the instance's lock (in a worker thread)."""
        with self._lock:
            if self.closed:  # closed while this call waited for its turn
                return error_result("environment_error", f"instance {self.id} is closed")
            return step(self._execute(name, args, started))

    def _check_open(self) -> None:
        if self.closed:
            raise InstanceClosedError(f"instance {self.id} of {self.env.id} is closed")

    def _prepare(
        self, name: str, arguments: dict[str, Any] | None, started: float
    ) -> dict[str, Any] | ToolResult:
        if self.closed:
            return error_result("environment_error", f"instance {self.id} is closed")
        spec = self.env.tool_map.get(name) if isinstance(name, str) else None
        if spec is None or name not in self.env.plans:
            known = ", ".join(self.env.tool_map)
            return error_result(
                "unknown_tool",
                f"unknown tool {name!r}; available tools: {known}. Call list_tools for their arguments.",
                time.perf_counter() - started,
            )
        args = {} if arguments is None else arguments
        problem = check_arguments(name, spec.input_schema, args, self.env.validators[name])
        if problem is not None:
            return error_result("invalid_arguments", problem, time.perf_counter() - started)
        return args

    async def _execute(self, name: str, args: dict[str, Any], started: float) -> ToolResult:
        plan = self.env.plans[name]
        self._proxy.begin_call()
        session = self.env.sessions(bind=self._sa)
        token = SESSION.set(session)
        failure: ToolFailure | None = None
        payload: Any = None
        try:
            payload = await plan.run(args)
        except (KeyboardInterrupt, asyncio.CancelledError):
            failure = ToolFailure(500, f"{name} was interrupted", "environment_error")
            raise
        except BaseException as exc:  # generated code may raise anything, even SystemExit
            failure = classify(name, exc)
        finally:
            SESSION.reset(token)
            try:
                session.close()  # discards what the tool did not commit, as under uvicorn
            except Exception as exc:
                failure = failure or classify(name, exc)
            try:
                self._proxy.end_call(ok=failure is None)
            except Exception as exc:  # e.g. a deferred foreign key failing at RELEASE
                if self._raw.in_transaction:
                    self._raw.execute("ROLLBACK")
                failure = failure or classify(name, exc)
        self.calls += 1
        latency = time.perf_counter() - started
        if failure is not None:
            return error_result(failure.error_type, failure.message, latency)
        return ToolResult(content=payload, latency_s=latency)
