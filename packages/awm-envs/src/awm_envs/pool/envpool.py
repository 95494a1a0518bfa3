"""``EnvPool``: N isolated instances behind acquire/release, for trainers and evaluators.

Instances are created once (in this process, or spread over sandbox
workers) and recycled: ``release`` resets the instance in the background
(a ``deserialize``, microseconds) and puts it back, so the next batch's
instances are ready before they are asked for. ``acquire`` waits when every
instance is busy: back-pressure instead of unbounded growth.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from awm_envs.errors import PoolClosedError
from awm_envs.pool.host import RemoteInstance
from awm_envs.pool.remote import WorkerPool
from awm_envs.pool.worker_template import template_default
from awm_envs.pool.workers import DEFAULT_CALL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT
from awm_envs.runtime.environment import Environment, load_environment
from awm_envs.runtime.instance import Instance

PooledInstance = Instance | RemoteInstance
"""What a pool hands out: an in-process instance, or one in a sandbox worker or Ray actor;
both implement :class:`awm_core.session.EnvInstance` and have the same methods."""


class EnvPool:
    """A fixed-size pool of isolated instances of one environment.

    ``workers=0`` keeps instances in this process (trusted code, fastest);
    ``workers=W`` hosts them in W sandbox processes with per-call time and
    memory limits (``memory_limit``: bytes a worker may add above its start-up
    size), and the bundle's ``app.py`` is never imported in this process; an
    instance whose worker crashed is recreated from the template on its next
    call, which says so once. ``backend="ray"`` hosts them in Ray actors instead, spread
    over the cluster's nodes, each running the same sandboxed worker (``workers=0`` there means one actor per cluster
    CPU, at most ``size``; ``ray_options`` go to the actors, e.g.
    ``{"num_cpus": 0.5, "memory": 2**30}``); see :mod:`awm_envs.pool.ray_backend`.
    ``template=True`` (default: ``AWM_WORKER_TEMPLATE``) forks the sandbox workers from one
    pre-imported template per process (:mod:`awm_envs.pool.worker_template`): for a node
    serving many environments at once.
    """

    BACKENDS = ("process", "ray")

    def __init__(
        self,
        env: Environment | str | Path,
        size: int = 8,
        *,
        workers: int = 0,
        call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
        backend: str = "process",
        ray_options: dict[str, Any] | None = None,
        template: bool | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        if backend not in self.BACKENDS:
            raise ValueError(
                f"unknown backend {backend!r}: use 'process' (worker processes on this machine) "
                "or 'ray' (Ray actors across a cluster; pip install 'awm-envs[ray]')"
            )
        self.ray_options = ray_options
        self.env_ref = env
        self.size = size
        self.workers = workers
        self.call_timeout = call_timeout
        self.memory_limit = memory_limit
        self.backend = backend
        self.template = template_default() if template is None else template
        self.worker_pool: Any = None
        self._free: asyncio.Queue[PooledInstance] = asyncio.Queue()
        self._all: list[PooledInstance] = []
        self._pending: set[asyncio.Task[None]] = set()
        self._started = False
        self._closed = False

    async def start(self) -> EnvPool:
        """Create every instance up front (concurrently across workers)."""
        if self._started:
            return self
        self._started = True
        if self.backend == "ray":
            from awm_envs.pool.ray_backend import RayWorkerPool, default_actor_count

            ref = self.env_ref.path if isinstance(self.env_ref, Environment) else self.env_ref
            actors = self.workers if self.workers > 0 else default_actor_count(self.size)
            self.worker_pool = RayWorkerPool(
                actors,
                call_timeout=self.call_timeout,
                actor_options=self.ray_options,
                memory_limit=self.memory_limit,  # each actor's sandboxed worker, as above
            )
            await self.worker_pool.start()
            # one create per actor at a time, all actors in parallel
            self._all = list(
                await asyncio.gather(*(self.worker_pool.create(ref) for _ in range(self.size)))
            )
        elif self.workers <= 0:
            env = (
                self.env_ref
                if isinstance(self.env_ref, Environment)
                else load_environment(self.env_ref)
            )
            self._all = [env.instance() for _ in range(self.size)]
        else:
            # never env_ref.tools or .instance(): app.py is imported only in the workers
            ref = self.env_ref.path if isinstance(self.env_ref, Environment) else self.env_ref
            self.worker_pool = WorkerPool(
                self.workers,
                call_timeout=self.call_timeout,
                memory_limit=self.memory_limit,
                # a crashed worker is replaced at once, not after an interpreter start; forked
                # from the template, a replacement takes milliseconds and needs no spare
                spare=not self.template,
                template=self.template,
            )
            try:
                await self.worker_pool.start()
                # the first create loads the bundle in a worker and says clearly if it cannot;
                # the rest run concurrently, balanced over the workers
                self._all = [await self.worker_pool.create(ref)]
                self._all += await asyncio.gather(
                    *(self.worker_pool.create(ref) for _ in range(self.size - 1))
                )
            except BaseException:
                await self.worker_pool.close()
                raise
        for inst in self._all:
            self._free.put_nowait(inst)
        return self

    async def __aenter__(self) -> EnvPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def available(self) -> int:
        """Instances ready to be acquired now."""
        return self._free.qsize()

    async def acquire(self) -> PooledInstance:
        """A ready, freshly reset instance; waits while all are in use."""
        if self._closed:
            raise PoolClosedError("the pool is closed")
        if not self._started:
            await self.start()
        return await self._free.get()

    async def acquire_many(self, n: int) -> list[PooledInstance]:
        """``n`` instances for a batch (waits until that many are free)."""
        return [await self.acquire() for _ in range(n)]

    async def release(self, instance: PooledInstance) -> None:
        """Give an instance back; it is reset in the background before it is handed out again."""
        if self._closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # a Ctrl-C tore the loop down and Python closes the episode's coroutine outside
            # it: there is no loop to reset the instance on, and the pool is going away
            return
        task = loop.create_task(self._recycle(instance))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _recycle(self, instance: PooledInstance) -> None:
        await instance.reset()
        self._free.put_nowait(instance)

    @contextlib.asynccontextmanager
    async def instance(self) -> AsyncIterator[PooledInstance]:
        """``async with pool.instance() as inst:`` acquire, use, release (and reset)."""
        inst = await self.acquire()
        try:
            yield inst
        finally:
            await self.release(inst)

    async def close(self) -> None:
        """Close every instance and the workers."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._pending):
            with contextlib.suppress(Exception):
                await task
        if self.worker_pool is not None:
            await self.worker_pool.close()
        else:
            for inst in self._all:
                inst.close_sync()
