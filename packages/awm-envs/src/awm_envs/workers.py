"""Sandboxed worker processes hosting many instances each, with per-call limits.

Untrusted generated tool code runs only in workers. Each worker is a process
(``forkserver`` on Linux: it forks from a server that has already imported
FastAPI and SQLAlchemy, so a replacement starts in milliseconds, not seconds)
with an address-space limit (``RLIMIT_AS``). The parent keeps one request in
flight per worker and a deadline on it: a call that hangs past the limit, or
a worker that dies (segfault, ``os._exit``, the memory limit), fails that call
with an ``environment_error`` result, the worker is replaced, and only the
instances that lived on it are lost (their next call says so; ``reset()``
recreates them). Other workers and their instances are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import secrets
import sys
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from awm_core.models import ToolResult, ToolSpec
from awm_envs.errors import PoolClosedError
from awm_envs.instance import error_result
from awm_envs.sources import resolve_env
from awm_envs.worker import result_from_tuple, worker_main

DEFAULT_CALL_TIMEOUT_S = 10.0
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
SETUP_TIMEOUT_S = 120.0


class WorkerDied(Exception):
    """The worker process is gone (crashed, killed, or timed out)."""


class WorkerRequestError(Exception):
    """The worker answered a request with an error (e.g. the bundle does not load)."""


def _context() -> multiprocessing.context.BaseContext:
    if sys.platform.startswith("linux"):
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["awm_envs.worker"])
        return ctx
    return multiprocessing.get_context("spawn")


@dataclass
class WorkerHandle:
    """The parent's end of one worker process."""

    index: int
    process: Any
    conn: Connection
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    inflight: asyncio.Future[Any] | None = None
    instances: set[str] = field(default_factory=set)
    alive: bool = True

    @property
    def pid(self) -> int | None:
        return self.process.pid  # type: ignore[no-any-return]


class WorkerPool:
    """``workers`` sandbox processes; instances are pinned to the least-loaded one.

    Async API, one event loop: ``await pool.start()`` (or ``async with``),
    ``await pool.create(env)`` -> :class:`RemoteInstance`, ``await pool.close()``.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    ) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = workers
        self.call_timeout = call_timeout
        self.memory_limit = memory_limit
        self.workers: list[WorkerHandle] = []
        self.replaced = 0
        self._ctx = _context()
        self._closed = False
        self._tools: dict[str, list[ToolSpec]] = {}
        self._instances: dict[str, RemoteInstance] = {}

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> WorkerPool:
        """Start every worker (in parallel) and wait until each answers a ping."""
        loop = asyncio.get_running_loop()
        self.workers = list(
            await asyncio.gather(
                *(loop.run_in_executor(None, self._spawn, i) for i in range(self.size))
            )
        )
        for w in self.workers:
            self._watch(w)
        await asyncio.gather(*(self._request(w, "ping", (), SETUP_TIMEOUT_S) for w in self.workers))
        return self

    async def __aenter__(self) -> WorkerPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop every worker; instances become unusable."""
        if self._closed:
            return
        self._closed = True
        for w in self.workers:
            self._kill(w, graceful=True)

    def _spawn(self, index: int) -> WorkerHandle:
        parent, child = self._ctx.Pipe(duplex=True)
        proc = self._ctx.Process(  # type: ignore[attr-defined]
            target=worker_main,
            args=(child, self.memory_limit),
            name=f"awm-worker-{index}",
            daemon=True,
        )
        proc.start()
        child.close()
        return WorkerHandle(index=index, process=proc, conn=parent)

    def _watch(self, w: WorkerHandle) -> None:
        asyncio.get_running_loop().add_reader(w.conn.fileno(), self._on_readable, w)

    def _on_readable(self, w: WorkerHandle) -> None:
        try:
            reply = w.conn.recv()
        except (EOFError, OSError):
            self._kill(w)
            return
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_result(reply)

    def _kill(self, w: WorkerHandle, graceful: bool = False) -> None:
        if not w.alive:
            return
        w.alive = False
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(w.conn.fileno())
        if graceful:
            w.conn.close()
            w.process.join(timeout=0.5)
        if w.process.is_alive():
            w.process.kill()
        w.process.join(timeout=5)
        with contextlib.suppress(Exception):
            w.conn.close()
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerDied(f"worker {w.index} (pid {w.pid}) died"))

    async def _replace(self, w: WorkerHandle) -> None:
        """Swap a dead worker for a fresh one in the same slot."""
        if self._closed or self.workers[w.index] is not w:
            return
        loop = asyncio.get_running_loop()
        fresh = await loop.run_in_executor(None, self._spawn, w.index)
        self.workers[w.index] = fresh
        self._watch(fresh)
        self.replaced += 1

    async def _request(
        self, w: WorkerHandle, op: str, args: tuple[Any, ...], timeout: float
    ) -> Any:
        """One request/answer with a deadline; a missed deadline kills the worker."""
        async with w.lock:
            if not w.alive:
                raise WorkerDied(f"worker {w.index} is gone")
            fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            w.inflight = fut
            try:
                w.conn.send((op, args))
            except (OSError, EOFError, BrokenPipeError) as exc:
                self._kill(w)
                raise WorkerDied(f"worker {w.index} is gone") from exc
            try:
                ok, value = await asyncio.wait_for(fut, timeout)
            except TimeoutError:
                self._kill(w)
                raise TimeoutError(op) from None
            except WorkerDied:
                raise
        if not ok:
            raise WorkerRequestError(value)
        return value

    def _pick(self) -> WorkerHandle:
        live = [w for w in self.workers if w.alive]
        if not live:
            raise WorkerDied("no live worker")
        return min(live, key=lambda w: len(w.instances))

    async def _on_failure(self, w: WorkerHandle) -> None:
        for iid in list(w.instances):
            lost = self._instances.get(iid)
            if lost is not None:
                lost._lost = True
        w.instances.clear()
        await self._replace(w)

    # -- instances ---------------------------------------------------------------------
    async def create(self, env: str | Path, instance_id: str | None = None) -> RemoteInstance:
        """A new instance of ``env`` (id or bundle path) in the least-loaded worker."""
        if self._closed:
            raise PoolClosedError("the worker pool is closed")
        path = str(resolve_env(env).resolve())
        iid = instance_id or secrets.token_hex(6)
        inst = RemoteInstance(self, path, iid)
        await inst._place()
        return inst

    def tools_of(self, path: str) -> list[ToolSpec]:
        return self._tools.get(path, [])

    def stats(self) -> dict[str, Any]:
        """Worker pids, instance counts and how many workers were replaced."""
        return {
            "workers": [
                {"index": w.index, "pid": w.pid, "alive": w.alive, "instances": len(w.instances)}
                for w in self.workers
            ],
            "replaced": self.replaced,
        }


class RemoteInstance:
    """An instance living in a sandbox worker (implements ``EnvSession``; async only).

    ``pool`` is a :class:`WorkerPool` or a
    :class:`~awm_envs.ray_backend.RayWorkerPool`: both offer the same
    ``_pick`` / ``_request`` / ``_on_failure`` host protocol, so an instance
    behaves the same (deadlines, lost-on-crash, recreated on ``reset``)
    whether its worker is a local process or a Ray actor on another node.
    """

    def __init__(self, pool: Any, env_path: str, instance_id: str) -> None:
        self.pool = pool
        self.env_path = env_path
        self.id = instance_id
        self.worker: WorkerHandle | None = None
        self._lost = False
        self.closed = False

    async def _place(self) -> None:
        w = self.pool._pick()
        try:
            tools = await self.pool._request(w, "create", (self.env_path, self.id), SETUP_TIMEOUT_S)
        except (WorkerDied, TimeoutError):
            await self.pool._on_failure(w)
            raise
        self.pool._tools[self.env_path] = [ToolSpec.model_validate(t) for t in tools]
        w.instances.add(self.id)
        self.worker = w
        self._lost = False
        self.pool._instances[self.id] = self

    async def list_tools(self) -> list[ToolSpec]:
        return self.pool.tools_of(self.env_path)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Run a tool in the worker; a hang or crash is an ``environment_error`` result."""
        if self.closed or self._lost or self.worker is None or not self.worker.alive:
            return error_result(
                "environment_error",
                f"instance {self.id} was lost when its worker process died; reset() recreates it",
            )
        w = self.worker
        try:
            value = await self.pool._request(
                w, "call", (self.id, name, arguments), self.pool.call_timeout
            )
        except TimeoutError:
            await self.pool._on_failure(w)
            return error_result(
                "environment_error",
                f"{name} did not finish within {self.pool.call_timeout:g} s; the environment "
                "worker was restarted and this instance's state is lost",
                self.pool.call_timeout,
            )
        except WorkerDied:
            await self.pool._on_failure(w)
            return error_result(
                "environment_error",
                f"{name} crashed the environment worker; it was restarted and this instance's state is lost",
            )
        except WorkerRequestError as exc:
            return error_result("environment_error", str(exc))
        return result_from_tuple(value)

    async def _simple(self, op: str, *args: Any) -> Any:
        if self._lost or self.worker is None or not self.worker.alive:
            raise WorkerDied(f"instance {self.id} was lost with its worker")
        w = self.worker
        try:
            return await self.pool._request(w, op, (self.id, *args), SETUP_TIMEOUT_S)
        except (WorkerDied, TimeoutError):
            await self.pool._on_failure(w)
            raise

    async def reset(self) -> None:
        """Back to the initial database; recreates the instance if its worker died."""
        if self._lost or self.worker is None or not self.worker.alive:
            await self._place()
            return
        await self._simple("reset")

    async def snapshot(self) -> bytes:
        return await self._simple("snapshot")  # type: ignore[no-any-return]

    async def restore(self, image: bytes) -> None:
        await self._simple("restore", image)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.pool._instances.pop(self.id, None)
        w = self.worker
        if w is not None and w.alive and not self._lost:
            w.instances.discard(self.id)
            with contextlib.suppress(Exception):
                await self.pool._request(w, "close", (self.id,), SETUP_TIMEOUT_S)

    @property
    def pid(self) -> int | None:
        return self.worker.pid if self.worker else None

    def __repr__(self) -> str:
        return f"RemoteInstance({self.id!r}, worker={self.worker.index if self.worker else None}, pid={self.pid})"


__all__ = ["RemoteInstance", "WorkerDied", "WorkerPool"]
