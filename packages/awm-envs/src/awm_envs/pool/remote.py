"""Sandboxed worker processes hosting many instances each, with per-call limits.

Untrusted generated tool code runs only in workers, never in this process.
Each worker is a long-lived :class:`~awm_envs.sandbox.SandboxProcess`: under
bubblewrap it has no network, no host file system but the interpreter, no
host environment variables, and a private PID namespace, so whatever a tool
starts (a detached child, a double fork) dies with its worker. Its address
space may grow ``memory_limit`` bytes above what it maps at start-up. The
host speaks :mod:`awm_envs.sandbox.wire` messages to it (JSON headers, raw
blobs for database images; never pickles) and reads them with
``loop.add_reader`` and a :class:`~awm_envs.sandbox.FrameReader`, so a
worker that stalls mid-message never blocks the event loop. Bundles are
shipped to a worker as files (:mod:`awm_envs.pool.worker_main`), so any worker can host
any environment and this process never imports a bundle's ``app.py``.

One request is in flight per worker, with a deadline. A call that hangs past
``call_timeout``, or a worker that dies (segfault, ``os._exit``, the memory
limit), costs that worker: it is replaced (at once, by the warm spare when
the pool keeps one), and every instance it hosted is recreated from the
template on its next use. Each such instance is told exactly once: the call
that crashed gets an ``environment_error`` saying so, and every other
instance of that worker gets one ``environment_error`` naming the real cause
on its next call (which is not run). Later calls work normally, so a server
whose worker crashed recovers without a ``reset``.

This module holds :class:`WorkerPool` (starting, replacing and placing
workers); the parts are :mod:`~awm_envs.pool.workers` (one worker process),
:mod:`~awm_envs.pool.channel` (requests with deadlines),
:mod:`~awm_envs.pool.host` (:class:`RemoteInstance` and the failure rules it
shares with the Ray pool) and :mod:`~awm_envs.pool.shipping` (bundles on the wire).
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

from awm_core.models import ToolSpec
from awm_envs.bundle.sources import resolve_env
from awm_envs.errors import PoolClosedError
from awm_envs.pool.channel import WorkerChannels
from awm_envs.pool.host import (
    RemoteInstance,
    Retry,
    WorkerDied,
    WorkerRequestError,
    bundle_request,
    tool_specs,
)
from awm_envs.pool.shipping import PackedBundles
from awm_envs.pool.worker_template import (
    WorkerTemplate,
    shared_template,
    template_default,
    template_refusal,
    warn_refused,
)
from awm_envs.pool.workers import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_MEMORY_LIMIT,
    SETUP_TIMEOUT_S,
    START_TIMEOUT_S,
    WorkerHandle,
    import_timeout_default,
    kill_group,
    start_worker_process,
)
from awm_envs.sandbox.isolation import Isolation, resolve


class WorkerPool(WorkerChannels):
    """``workers`` sandbox processes; instances are pinned to the least-loaded one.

    Async API, one event loop: ``await pool.start()`` (or ``async with``),
    ``await pool.create(env)`` -> :class:`RemoteInstance`, ``await pool.close()``.

    ``memory_limit`` is the address space a worker may add above its
    start-up size (None: no limit); ``call_timeout`` bounds one tool call;
    ``import_timeout`` bounds importing a bundle's ``app.py`` in a worker.
    ``spare=True`` keeps one more worker started and idle, so a crashed
    worker is replaced at once instead of after an interpreter start.
    ``template=True`` (default: ``AWM_WORKER_TEMPLATE``) forks workers from this
    process's pre-imported sandboxed template instead (:mod:`~awm_envs.pool.worker_template`):
    milliseconds and a few MiB each instead of a second and ~110 MiB, for pools of many
    environments on one node.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
        spare: bool = False,
        import_timeout: float | None = None,
        require_isolation: bool | None = None,
        debug: bool = False,
        template: bool | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.use_template = template if template is not None else template_default()
        self._template: WorkerTemplate | None = None
        self.size = workers
        self.call_timeout = call_timeout
        self.memory_limit = memory_limit
        self.spare = spare
        self.import_timeout = (
            import_timeout if import_timeout is not None else import_timeout_default()
        )
        self.setup_timeout = SETUP_TIMEOUT_S
        self.require_isolation = require_isolation
        self.debug = debug
        self.isolation: Isolation | None = None
        self.workers: list[WorkerHandle] = []
        self.spare_worker: WorkerHandle | None = None
        self.replaced = 0
        self._closed = False
        self._killed = False  # kill() was called: no more workers are started
        self._tools: dict[str, list[ToolSpec]] = {}
        self._instances: dict[str, RemoteInstance] = {}
        self._bundles = PackedBundles()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._retired: list[WorkerHandle] = []
        self._last_start_error = ""
        self._spare_failures = 0

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> WorkerPool:
        """Start every worker (in parallel) and wait until each is ready."""
        if self.workers:
            return self
        self._check_open()
        loop = asyncio.get_running_loop()
        if self.isolation is None:
            self.isolation = await loop.run_in_executor(None, resolve, self.require_isolation)
        if self.use_template and self._template is None and (refused := template_refusal()):
            warn_refused(refused)
            self.use_template = False
        if self.use_template and self._template is None:
            template = shared_template(self.isolation, debug=self.debug)
            self._template = await loop.run_in_executor(None, template.start)
        try:
            for i in range(self.size):  # all start at once: each imports FastAPI & co. (~2 s)
                self.workers.append(self._spawn(i))
            await asyncio.gather(*(self._wait_ready(w) for w in self.workers))
        except BaseException:
            await self.close()
            raise
        self._keep_spare()
        return self

    async def __aenter__(self) -> WorkerPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise PoolClosedError("the worker pool is closed")
        if self._killed:
            raise PoolClosedError("the worker pool was killed")

    def _handles(self) -> list[WorkerHandle]:
        """Every worker this pool started and has not reaped: its slots, the spare, the retired."""
        handles = [*self.workers, *self._retired]
        if self.spare_worker is not None:
            handles.append(self.spare_worker)
        return handles

    @property
    def worker_exitcodes(self) -> list[int | None]:
        """The exit code of the worker in each slot: None while it runs, negative for a signal.

        A worker that died is replaced in its slot (see :attr:`replaced`), so this
        reports the current workers; :attr:`RemoteInstance.worker_exitcode` tells
        an instance's own worker.
        """
        return [w.exitcode for w in self.workers]

    def kill(self) -> None:
        """Kill every worker process now (SIGKILL, its whole sandbox), with no graceful teardown.

        For generated code that must not run a moment longer. The pool starts
        no replacement and takes no new instances afterwards; ``close()`` (safe
        after ``kill()``) still reaps the processes and removes their folders.
        Instances' pending requests fail with an ``environment_error``.
        """
        self._killed = True
        for w in self._handles():
            self._stop(w, "was killed with its pool")
            kill_group(w.proc)  # also one that was already detached but not yet reaped

    async def close(self) -> None:
        """Stop every worker (and everything they started); instances become unusable."""
        if self._closed:
            return
        self._closed = True
        handles = self._handles()
        for w in handles:
            self._stop(w, "was stopped: its pool was closed")
        for task in list(self._tasks):
            if not task.done() and task not in {w.exit_task for w in handles}:
                task.cancel()
        buried = [w.exit_task for w in handles if w.exit_task is not None]
        for result in await asyncio.gather(*self._tasks, *buried, return_exceptions=True):
            del result

    def _spawn(self, index: int) -> WorkerHandle:
        assert self.isolation is not None
        proc, root = start_worker_process(
            self.memory_limit,
            isolation=self.isolation,
            debug=self.debug,
            name=f"awm-worker-{index}",
            template=self._template,
        )
        w = WorkerHandle(index, proc, root)
        loop = asyncio.get_running_loop()
        loop.add_reader(proc.fileno(), self._on_readable, w)
        w.start_timer = loop.call_later(START_TIMEOUT_S, self._start_timed_out, w)
        return w

    async def _wait_ready(self, w: WorkerHandle) -> None:
        try:
            await asyncio.shield(w.ready)
        except WorkerDied as exc:
            reason = await self._death_reason(w)
            raise WorkerDied(
                f"{exc} (it {reason}); run with debug=True to see its stderr", reason=reason
            ) from None

    def _start_timed_out(self, w: WorkerHandle) -> None:
        if not w.ready.done():
            self._stop(w, f"did not start within {START_TIMEOUT_S:g} s and was stopped")

    async def _warm(self, w: WorkerHandle) -> None:
        """A ready spare imports the pool's environments at once, so that the instances
        recreated on it after a crash need no import: replacement is immediate."""
        for path in list(self._tools):
            if not w.alive or self._closed or self._killed:
                return
            try:
                await self._request(w, "load", (path,), self.setup_timeout)
            except WorkerRequestError:
                continue  # that bundle no longer loads: creating an instance will say why
            except (WorkerDied, TimeoutError):
                self._on_failure(
                    w, None, "the environment worker hosting this instance died while importing"
                )
                return
        self._spare_failures = 0

    def _keep_spare(self) -> None:
        if self.spare_worker is not None and not self.spare_worker.alive:
            self._retired.append(self.spare_worker)  # it failed to start: try a fresh one
            self.spare_worker = None
        if not self.spare or self._closed or self._killed or self.spare_worker is not None:
            return
        try:
            self.spare_worker = self._spawn(-1)
        except OSError as exc:
            self._last_start_error = str(exc)

    # -- placement and failures (the host protocol RemoteInstance uses) --------------------
    async def _pick(self) -> WorkerHandle:
        """The least-loaded live worker, waiting for it if it is still starting (a replacement).

        Load counts instances and creates under way, so a burst of creates, or the
        instances of a crashed worker coming back, spread evenly instead of piling
        onto whichever worker happens to be ready first.
        """
        revived = False
        while True:
            self._check_open()
            live = [w for w in self.workers if w.alive]
            if not live:
                if revived:
                    raise WorkerDied(
                        f"no sandbox worker could be started: {self._last_start_error}"
                    )
                revived = True
                for w in list(self.workers):
                    self._replace(w)
                continue
            w = min(live, key=lambda w: (len(w.instances) + w.placing, not w.is_ready))
            w.placing += 1
            if w.is_ready:
                return w
            try:
                await asyncio.shield(w.ready)
                return w
            except WorkerDied:
                self._placed(w)
                self._last_start_error = await self._death_reason(w)
            except BaseException:
                self._placed(w)
                raise

    def _down(self, w: WorkerHandle) -> None:
        if w.alive:
            self._stop(w, w.stopped or "was stopped after a failure")

    def _after_failure(self, w: WorkerHandle) -> None:
        if w is self.spare_worker:
            self.spare_worker = None
            self._spare_failures += 1
            if self._spare_failures < 3:  # a spare that keeps dying idle is not worth its CPU
                self._keep_spare()
        else:
            self._replace(w)

    def _replace(self, w: WorkerHandle) -> None:
        """Put a live worker in a dead one's slot: the warm spare, or a fresh one."""
        if self._closed or self._killed or w.alive or w.index < 0 or self.workers[w.index] is not w:
            return
        self._retired.append(w)
        self._retired = [r for r in self._retired if r.exit_task is None or not r.exit_task.done()]
        spare = self.spare_worker
        if spare is not None and spare.alive and spare.is_ready:
            self.spare_worker = None
            spare.index = w.index
            self.workers[w.index] = spare
        else:
            try:
                self.workers[w.index] = self._spawn(w.index)
            except OSError as exc:
                self._last_start_error = str(exc)
                return
        self.replaced += 1
        self._keep_spare()

    # -- instances ---------------------------------------------------------------------
    async def create(self, env: str | Path, instance_id: str | None = None) -> RemoteInstance:
        """A new instance of ``env`` (id or bundle path) in the least-loaded worker."""
        self._check_open()
        path = str(resolve_env(env).resolve())
        iid = instance_id or secrets.token_hex(6)
        inst = RemoteInstance(self, path, iid)
        await inst._place()
        return inst

    async def load(self, env: str | Path) -> list[ToolSpec]:
        """The tools of ``env``, from a worker (its app.py is imported there, never here)."""
        self._check_open()
        path = str(resolve_env(env).resolve())
        if path not in self._tools:
            for attempt in range(3):
                w = await self._pick()
                try:
                    tools = await bundle_request(self, w, "load", (path,), None, path)
                    break
                except Retry:
                    if attempt == 2:
                        raise WorkerDied(
                            "sandbox workers kept dying while loading the bundle"
                        ) from None
                finally:
                    self._placed(w)
            self._tools[path] = tool_specs(tools)
        return self._tools[path]

    def tools_of(self, path: str) -> list[ToolSpec]:
        return self._tools.get(path, [])

    def stats(self) -> dict[str, Any]:
        """Worker pids, instance counts, start times and how many workers were replaced."""
        return {
            "workers": [
                {
                    "index": w.index,
                    "pid": w.pid,
                    "alive": w.alive,
                    "instances": len(w.instances),
                    "start_s": w.start_s,
                }
                for w in self.workers
            ],
            "spare": self.spare_worker is not None and self.spare_worker.is_ready,
            "replaced": self.replaced,
            "isolation": self.isolation.kind if self.isolation else None,
        }


__all__ = ["RemoteInstance", "WorkerDied", "WorkerPool", "WorkerRequestError"]
