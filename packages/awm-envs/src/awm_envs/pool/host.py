"""What an instance needs of the pool hosting it, shared by the process and Ray pools.

:class:`RemoteInstance` lives in a pool's worker; :class:`InstanceHost` holds the
failure rules both pools follow: a worker that is lost costs the instances it
hosted their state, each is recreated from the template on its next use and
told once, naming the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core.models import ToolResult, ToolSpec
from awm_envs.errors import SyncCallError
from awm_envs.pool.worker_main import result_from_wire
from awm_envs.runtime.results import error_result


class WorkerDied(Exception):
    """The worker process is gone (crashed, killed, or timed out).

    ``reason`` says how it ended (``exited with status 3 (sys.exit or os._exit ...)``)
    when that is known: by then the pool has already put a fresh worker in its slot.
    """

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class WorkerRequestError(Exception):
    """The worker answered a request with an error (e.g. the bundle does not load)."""


class ImportTimeout(WorkerRequestError, TimeoutError):
    """A bundle's ``app.py`` did not finish importing within the pool's import limit."""


@dataclass
class Failure:
    """Why a worker is gone, told once to each instance it hosted."""

    culprit: str | None  # the instance whose request killed it, if one did
    others: str  # what the other instances are told
    culprit_text: str  # what the culprit is told, when it is told later (an abandoned call)
    with_reason: bool  # append "(it <how the process ended>)"


class Retry(Exception):
    """Internal: the worker picked for a new instance died of something else; pick again."""


class InstanceHost:
    """What :class:`RemoteInstance` needs of a pool, and the failure rules both pools share.

    A subclass provides ``_pick``, ``_request``, ``_death_reason``, ``_down``
    (stop a failed worker) and ``_after_failure`` (replace it).
    """

    call_timeout: float
    setup_timeout: float
    _tools: dict[str, list[ToolSpec]]
    _instances: dict[str, RemoteInstance]

    def _placed(self, w: Any) -> None:
        """A create picked for ``w`` was answered (``_pick`` counted it, to balance a burst)."""
        w.placing = max(0, w.placing - 1)

    def _on_failure(
        self,
        w: Any,
        culprit: str | None,
        others: str,
        *,
        culprit_text: str | None = None,
        with_reason: bool = True,
    ) -> None:
        """The worker is gone: its instances are recreated on next use, each told once (first cause wins)."""
        if w.failure is not None:
            return
        w.failure = Failure(culprit, others, culprit_text or "", with_reason)
        self._down(w)
        for iid in list(w.instances):
            inst = self._instances.get(iid)
            if inst is None:
                continue
            inst._lost = True
            if iid != culprit or culprit_text:
                inst._notice = w
        w.instances.clear()
        self._after_failure(w)

    async def _notice_text(self, w: Any, iid: str) -> str:
        failure: Failure | None = w.failure
        if failure is None:
            return "the environment worker hosting this instance was replaced"
        text: str = failure.culprit_text if iid == failure.culprit else failure.others
        if failure.with_reason:
            text += f" (it {await self._death_reason(w)})"
        return text

    def _down(self, w: Any) -> None:
        raise NotImplementedError

    def _after_failure(self, w: Any) -> None:
        raise NotImplementedError

    async def _death_reason(self, w: Any) -> str:
        raise NotImplementedError


def tool_specs(data: Any) -> list[ToolSpec]:
    try:
        return [ToolSpec.model_validate(t) for t in data]
    except (TypeError, ValueError) as exc:
        raise WorkerRequestError(
            f"the environment worker sent malformed tool specs: {exc}"
        ) from None


async def bundle_request(
    pool: Any, w: Any, op: str, args: tuple[Any, ...], who: str | None, path: str
) -> Any:
    """A request that loads a bundle in the worker: a crash or a hang is named after its app.py."""
    try:
        return await pool._request(w, op, args, pool.setup_timeout, who=who)
    except ImportTimeout:
        pool._on_failure(
            w,
            who,
            "another environment's app.py did not finish importing, so the shared environment "
            "worker was stopped",
            with_reason=False,
        )
        raise
    except (WorkerDied, TimeoutError) as exc:
        pool._on_failure(
            w,
            who,
            "another environment's app.py crashed the shared environment worker while it was "
            "being imported",
        )
        if w.failure is not None and w.failure.culprit != who:
            raise Retry() from None  # the worker died of something else while this waited
        if isinstance(exc, TimeoutError):
            raise
        reason = await pool._death_reason(w)
        raise WorkerDied(
            f"the sandbox worker died while loading {Path(path) / 'app.py'} (it {reason})",
            reason=reason,
        ) from None


def _killed_from_outside(reason: str) -> bool:
    """Whether a worker's death reads as a SIGKILL the host did not send (see ``describe_exit``)."""
    return reason.startswith("killed (SIGKILL")


class RemoteInstance:
    """An instance living in a sandbox worker (implements :class:`awm_core.session.EnvInstance`).

    Same API as the in-process :class:`~awm_envs.runtime.instance.Instance`:
    every method is async, and each has a ``*_sync`` twin. The twins wait on
    the pool's event loop, so they work from another thread (a sync trainer
    loop next to the pool's loop); called on the loop's own thread they raise
    :class:`~awm_envs.errors.SyncCallError` at once (use ``await``) instead of
    deadlocking.

    ``pool`` is a :class:`WorkerPool` or a
    :class:`~awm_envs.pool.ray_backend.RayWorkerPool`: both offer the same host
    protocol (``_pick``, ``_placed``, ``_request``, ``_on_failure``,
    ``_death_reason``, ``_notice_text``), so an instance behaves the same -
    deadlines, recreated from the template after its worker is lost, told
    once - whether its worker is a local sandbox or a Ray actor.
    """

    def __init__(self, pool: Any, env_path: str, instance_id: str) -> None:
        self.pool = pool
        self.env_path = env_path
        self.id = instance_id
        self.worker: Any = None
        self._lost = False  # its worker is gone: recreate before the next use
        self._notice: Any = None  # the lost worker whose story the agent has not heard yet
        self.closed = False
        self.recreated = 0
        self._loop: asyncio.AbstractEventLoop | None = None  # the pool's loop, for *_sync

    async def _place(self) -> None:
        self._loop = asyncio.get_running_loop()
        for attempt in range(3):
            w = await self.pool._pick()
            try:
                tools = await bundle_request(
                    self.pool, w, "create", (self.env_path, self.id), self.id, self.env_path
                )
                break
            except Retry:
                if attempt == 2:
                    raise WorkerDied(
                        "sandbox workers kept dying while this instance was created"
                    ) from None
            finally:
                self.pool._placed(w)
        self.pool._tools[self.env_path] = tool_specs(tools)
        w.instances.add(self.id)
        self.worker = w
        self._lost = False
        self.pool._instances[self.id] = self

    async def _recreate(self) -> None:
        """A fresh instance from the template on a live worker, in place of the lost one."""
        await self._place()
        self.recreated += 1

    async def list_tools(self) -> list[ToolSpec]:
        tools: list[ToolSpec] = self.pool.tools_of(self.env_path)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Run a tool in the worker; a hang or crash is an ``environment_error`` result."""
        if self.closed:
            return error_result("environment_error", f"instance {self.id} is closed")
        if self._notice is not None:
            return await self._tell(name)
        if self._lost:
            try:
                await self._recreate()
            except Exception as exc:
                return error_result(
                    "environment_error",
                    f"instance {self.id} could not be recreated after its worker was lost: {exc}",
                )
        w = self.worker
        pool = self.pool
        try:
            value = await pool._request(
                w, "call", (self.id, name, arguments), pool.call_timeout, who=self.id
            )
        except TimeoutError:
            pool._on_failure(
                w,
                self.id,
                f"another instance's call to {name} did not finish within {pool.call_timeout:g} s, "
                "so the shared environment worker was stopped",
                with_reason=False,
            )
            if self._notice is not None:
                return await self._tell(name)
            self._lost = True
            return error_result(
                "environment_error",
                f"{name} did not finish within {pool.call_timeout:g} s; the environment worker "
                "was stopped and this instance was reset to its initial state",
                pool.call_timeout,
            )
        except WorkerDied:
            # SIGKILL is not something a tool's Python code does to itself by accident: another
            # process or the kernel's OOM killer did it, so the call it was running is not blamed
            reason = await pool._death_reason(w) if w.failure is None else None
            outside = reason is not None and _killed_from_outside(reason)
            pool._on_failure(
                w,
                self.id,
                f"the shared environment worker was killed from outside while it ran another "
                f"instance's call to {name}"
                if outside
                else f"another instance's call to {name} crashed the shared environment worker",
            )
            if self._notice is not None:  # it was someone else's doing
                return await self._tell(name)
            self._lost = True
            reason = reason or await pool._death_reason(w)
            if outside:
                return error_result(
                    "environment_error",
                    f"the environment worker was killed from outside while it ran {name} "
                    f"(it {reason}); {name} is not known to have caused it. The worker was "
                    "replaced and this instance was reset to its initial state",
                )
            return error_result(
                "environment_error",
                f"{name} crashed the environment worker (it {reason}); the worker was replaced and "
                "this instance was reset to its initial state",
            )
        except WorkerRequestError as exc:
            return error_result("environment_error", str(exc))
        try:
            return result_from_wire(value)
        except ValueError as exc:
            return error_result("environment_error", f"the environment worker sent {exc}")

    async def _tell(self, name: str) -> ToolResult:
        """Recreate the instance and say, once, why its state is gone."""
        lost_worker, self._notice = self._notice, None
        why = await self.pool._notice_text(lost_worker, self.id)
        try:
            if self._lost:
                await self._recreate()
        except Exception as exc:
            return error_result(
                "environment_error",
                f"{why}; this instance could not be recreated: {exc}",
            )
        return error_result(
            "environment_error",
            f"{why}; this instance was reset to its initial state and {name} was not run "
            "(call it again if it is still needed)",
        )

    async def _simple(self, op: str, *args: Any) -> Any:
        if self.closed:
            raise WorkerDied(f"instance {self.id} is closed")
        if self._lost:
            await self._recreate()
        w = self.worker
        try:
            return await self.pool._request(
                w, op, (self.id, *args), self.pool.setup_timeout, who=self.id
            )
        except (WorkerDied, TimeoutError):
            self.pool._on_failure(
                w,
                self.id,
                f"the shared environment worker died during another instance's {op}",
                culprit_text=f"the environment worker died during a {op} of this instance",
            )
            raise

    async def reset(self) -> None:
        """Back to the initial database; recreates the instance if its worker was lost."""
        self._notice = None  # a deliberate reset: nothing to tell
        if not self._lost:
            try:
                await self._simple("reset")
                return
            except (WorkerDied, TimeoutError):
                self._notice = None  # its worker died under the reset: a fresh one does as well
        await self._recreate()

    async def snapshot(self) -> bytes:
        """The database as bytes (a complete SQLite image)."""
        image = await self._simple("snapshot")
        if not isinstance(image, bytes):
            raise WorkerRequestError("the environment worker sent a snapshot that is not bytes")
        return image

    async def restore(self, image: bytes) -> None:
        """Replace the database with ``image``."""
        self._notice = None
        await self._simple("restore", image)

    async def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read-only SQL against this instance, run in its worker."""
        rows = await self._simple("query", sql, list(params))
        return [tuple(row) for row in rows]

    # -- sync twins: the same calls, waited for on the pool's event loop -------------------
    def _wait(self, coro: Coroutine[Any, Any, Any], what: str) -> Any:
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop or not loop.is_running():
            coro.close()
            if loop is not None and running is loop:
                why = f"is this thread's: use `await inst.{what}(...)` here instead"
            else:
                why = (
                    "is not running: call it from another thread while the pool runs, "
                    f"or use `await inst.{what}(...)`"
                )
            raise SyncCallError(f"{what}_sync() waits on the pool's event loop, which {why}")
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def list_tools_sync(self) -> list[ToolSpec]:
        """Sync form of :meth:`list_tools`."""
        tools: list[ToolSpec] = self.pool.tools_of(self.env_path)
        return tools

    def call_tool_sync(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Sync form of :meth:`call_tool` (from a thread other than the pool's loop)."""
        result: ToolResult = self._wait(self.call_tool(name, arguments), "call_tool")
        return result

    def snapshot_sync(self) -> bytes:
        """Sync form of :meth:`snapshot`."""
        image: bytes = self._wait(self.snapshot(), "snapshot")
        return image

    def restore_sync(self, image: bytes) -> None:
        """Sync form of :meth:`restore`."""
        self._wait(self.restore(image), "restore")

    def reset_sync(self) -> None:
        """Sync form of :meth:`reset`."""
        self._wait(self.reset(), "reset")

    def query_sync(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Sync form of :meth:`query`."""
        rows: list[tuple[Any, ...]] = self._wait(self.query(sql, params), "query")
        return rows

    def close_sync(self) -> None:
        """Sync form of :meth:`close`."""
        self._wait(self.close(), "close")

    async def __aenter__(self) -> RemoteInstance:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the instance in its worker; it cannot be used afterwards."""
        if self.closed:
            return
        self.closed = True
        self.pool._instances.pop(self.id, None)
        w = self.worker
        if w is not None and w.alive and not self._lost:
            w.instances.discard(self.id)
            with contextlib.suppress(Exception):
                await self.pool._request(
                    w, "close", (self.id,), self.pool.setup_timeout, who=self.id
                )

    @property
    def pid(self) -> int | None:
        pid: int | None = self.worker.pid if self.worker else None
        return pid

    @property
    def worker_exitcode(self) -> int | None:
        """The exit code of the worker process hosting this instance.

        None while that process runs, or where it is not known (not placed yet,
        a Ray actor); negative for a signal. After a crash it names the worker
        that crashed until the instance is recreated on a new one (its next use).
        """
        code: int | None = self.worker.exitcode if self.worker is not None else None
        return code

    def __repr__(self) -> str:
        return f"RemoteInstance({self.id!r}, worker={self.worker.index if self.worker else None}, pid={self.pid})"
