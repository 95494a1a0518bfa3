"""Sandbox workers as Ray actors, so one :class:`~awm_envs.pool.envpool.EnvPool` can span a cluster.

``EnvPool(env, size=N, backend="ray")`` places the same worker code as the
process backend (:class:`~awm_envs.pool.worker_main.WorkerState`) in Ray actors,
spread over the cluster's nodes. The instance API, per-call deadlines and
failure semantics are those of :mod:`awm_envs.pool.remote`: a call that misses
its deadline, or an actor that dies (node lost, out-of-memory kill, a
crash), fails that call with an ``environment_error`` result; the actor is
killed and replaced in its slot, and the instances that lived on it are
recreated from the template on their next call, each told exactly once.

Bundles are shipped, not assumed: the bundle folder is read once on the
driver, put in Ray's object store, and written to a node-local temporary
folder by each actor that needs it, so other nodes need ``awm-envs``
installed but not the bundle files.

Scaling out does not drop isolation: each actor runs the environment code in
a sandboxed worker process of its own (:class:`~awm_envs.sandbox.SandboxProcess`,
the same one the process backend uses: bubblewrap, an unprivileged uid,
seccomp, a pids cgroup, the address-space limit ``memory_limit``) and relays
requests to it; the actor itself never imports a bundle's ``app.py``. A worker
that dies takes its actor with it, so Ray's own failure path replaces both.

Requires the ``ray`` extra: ``pip install 'awm-envs[ray]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core.errors import AWMError
from awm_core.models import ToolSpec
from awm_core.paths import process_scratch
from awm_envs.bundle.sources import resolve_env
from awm_envs.errors import PoolClosedError
from awm_envs.pool.host import (
    Failure,
    InstanceHost,
    RemoteInstance,
    WorkerDied,
    WorkerRequestError,
)
from awm_envs.pool.shipping import PackedBundles, ShippedBundle
from awm_envs.pool.worker_main import WorkerState, answer
from awm_envs.pool.workers import DEFAULT_CALL_TIMEOUT_S, DEFAULT_MEMORY_LIMIT, SETUP_TIMEOUT_S
from awm_envs.sandbox import wire

DEFAULT_ACTOR_OPTIONS: dict[str, Any] = {"num_cpus": 1, "scheduling_strategy": "SPREAD"}


class RayUnavailableError(AWMError, ImportError):
    """``backend="ray"`` was asked for but Ray is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "the Ray backend needs Ray: pip install 'awm-envs[ray]' "
            "(or use backend='process' for workers on this machine)"
        )


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError() from None
    return ray


class _SandboxedWorker:
    """A sandboxed worker process driven synchronously from inside a Ray actor.

    The same worker entry, limits and wire protocol as the process backend's
    workers (:mod:`awm_envs.pool.worker_main`); bundles are shipped to it over
    the channel and written to its private ``/tmp``.
    """

    def __init__(self, memory_limit: int | None) -> None:
        from awm_envs.pool.workers import START_TIMEOUT_S, start_worker_process
        from awm_envs.sandbox import resolve

        self.proc, self.scratch = start_worker_process(
            memory_limit, isolation=resolve(), name="awm-ray-worker", scratch_prefix="awm-ray-"
        )
        ready = self.proc.recv(START_TIMEOUT_S)
        if ready is None or not ready[0].get("ready"):
            self.proc.kill()
            raise WorkerDied(f"the sandboxed worker did not start (it {self.proc.exit_reason()})")

    def request(self, op: str, args: tuple[Any, ...]) -> tuple[bool, Any]:
        """One request to the worker: ``(True, value)`` or ``(False, message)``.

        A worker that is gone takes the actor down with it (Ray then reports the
        actor lost and the driver replaces it), exactly as a dead worker process
        is replaced by the process backend.
        """
        from awm_envs.pool.workers import encode_request

        header, blobs = encode_request(op, args)
        try:
            self.proc.send(header, blobs, timeout=SETUP_TIMEOUT_S)
            message = self.proc.recv(None)
        except (wire.ChannelClosed, wire.ProtocolError, OSError, TimeoutError):
            message = None
        if message is None:
            os._exit(1)  # the sandboxed worker died: so does this actor (see above)
        reply, out = message
        if not reply.get("ok"):
            return (False, str(reply.get("error", "the worker refused the request")))
        if reply.get("blob"):
            return (True, (reply["value"], out[0]) if "value" in reply else out[0])
        return (True, reply.get("value"))

    def close(self) -> None:
        self.proc.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


class SandboxActor:
    """The body of one Ray actor: a sandboxed worker process and the bundles shipped to it.

    Ray runs one method at a time on an actor (the default), which is the
    same one-request-at-a-time contract as a worker process. ``sandboxed=False``
    hosts the instances in the actor's own process instead (trusted bundles).
    """

    def __init__(self, memory_limit: int | None = None, sandboxed: bool = True) -> None:
        self.worker = _SandboxedWorker(memory_limit) if sandboxed else None
        self.state = WorkerState()
        self.local: dict[str, str] = {}

    def where(self) -> tuple[int, str]:
        """This actor's pid and Ray node id."""
        return os.getpid(), _ray().get_runtime_context().get_node_id()

    def materialize(self, bundle: ShippedBundle) -> str:
        """Hand a shipped bundle to the worker (or write it under this actor's folder) once."""
        key = bundle.key
        local = self.local.get(key)
        if local is not None:
            return local
        if self.worker is not None:
            ok, value = self.worker.request("ship", (key, key, bundle.names, bundle.data))
            if not ok:
                raise WorkerRequestError(value)
            local = self.local[key] = key  # the worker names it by its key
            return local
        folder = process_scratch("awm-ray-bundles-") / key
        for name, data in bundle.files().items():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        local = self.local[key] = str(folder)
        return local

    def handle(self, op: str, args: tuple[Any, ...]) -> tuple[bool, Any]:
        """One request; ``create``/``load`` name a bundle by its key (see :meth:`materialize`)."""
        if op in ("create", "load"):
            local = self.local.get(args[0])
            if local is None:
                return (False, f"bundle {args[0]} was not shipped to this actor")
            args = (local, *args[1:])
        if self.worker is not None:
            return self.worker.request(op, tuple(args))
        return answer(self.state, op, args)


@dataclass
class RayWorkerHandle:
    """The driver's end of one actor (same fields as :class:`~awm_envs.pool.workers.WorkerHandle`)."""

    index: int
    actor: Any
    pid: int | None = None
    node_id: str | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    instances: set[str] = field(default_factory=set)
    shipped: set[str] = field(default_factory=set)
    placing: int = 0  # creates picked for this actor and not answered yet (balances a burst)
    alive: bool = True
    failure: Failure | None = None  # why it was lost, told once to each of its instances
    death: str = "was lost"  # how it ended, in words

    @property
    def exitcode(self) -> int | None:
        """Not known: an actor's process belongs to Ray (see ``death`` for how it ended)."""
        return None


class RayWorkerPool(InstanceHost):
    """``workers`` Ray actors hosting instances; same async API as :class:`~awm_envs.pool.remote.WorkerPool`.

    Connects to the running Ray instance (``ray.init()`` first to choose a
    cluster; otherwise a local one is started). ``actor_options`` go to
    ``ray.remote`` (default: one CPU each, spread over nodes).
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
        actor_options: dict[str, Any] | None = None,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
        sandboxed: bool = True,
    ) -> None:
        if workers < 1:
            raise ValueError("a Ray worker pool needs at least one actor")
        self.memory_limit = memory_limit
        self.sandboxed = sandboxed
        ray = _ray()
        self.size = workers
        self.call_timeout = call_timeout
        self.setup_timeout = SETUP_TIMEOUT_S
        self.actor_options = {**DEFAULT_ACTOR_OPTIONS, **(actor_options or {})}
        self.workers: list[RayWorkerHandle] = []
        self.replaced = 0
        self._ray = ray
        self._actor_class = ray.remote(SandboxActor)
        self._closed = False
        self._tools: dict[str, list[ToolSpec]] = {}
        self._instances: dict[str, RemoteInstance] = {}
        self._bundles = PackedBundles()
        self._refs: dict[str, Any] = {}  # bundle key -> its object ref
        self._locating: set[asyncio.Task[None]] = set()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> RayWorkerPool:
        """Start every actor and wait until each says where it runs."""
        if not self._ray.is_initialized():
            self._ray.init()
        self.workers = [self._spawn(i) for i in range(self.size)]
        await asyncio.gather(*(self._locate(w) for w in self.workers))
        return self

    async def __aenter__(self) -> RayWorkerPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Kill every actor; instances become unusable."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._locating):
            task.cancel()
        for w in self.workers:
            self._kill(w)

    def _spawn(self, index: int) -> RayWorkerHandle:
        actor = self._actor_class.options(
            name=f"awm-worker-{secrets.token_hex(4)}-{index}", **self.actor_options
        ).remote(self.memory_limit, self.sandboxed)
        return RayWorkerHandle(index=index, actor=actor)

    async def _locate(self, w: RayWorkerHandle) -> None:
        try:
            w.pid, w.node_id = await asyncio.wait_for(
                _as_future(w.actor.where.remote()), SETUP_TIMEOUT_S
            )
        except (TimeoutError, self._ray.exceptions.RayError) as exc:
            self._kill(w)
            raise WorkerDied(
                f"Ray actor {w.index} did not start: {exc}. Check that the cluster has "
                f"resources for {self.actor_options} and that awm-envs is installed on every node."
            ) from exc

    def _kill(self, w: RayWorkerHandle) -> None:
        if not w.alive:
            return
        w.alive = False
        with contextlib.suppress(Exception):
            self._ray.kill(w.actor, no_restart=True)

    def _replace(self, w: RayWorkerHandle) -> None:
        """Swap a dead actor for a fresh one in the same slot (calls queue until it is up)."""
        if self._closed or self.workers[w.index] is not w:
            return
        fresh = self._spawn(w.index)
        self.workers[w.index] = fresh
        self.replaced += 1
        task = asyncio.ensure_future(self._locate_quietly(fresh))
        self._locating.add(task)
        task.add_done_callback(self._locating.discard)

    async def _locate_quietly(self, w: RayWorkerHandle) -> None:
        with contextlib.suppress(WorkerDied):
            await self._locate(w)

    # -- the host protocol RemoteInstance uses --------------------------------------------
    async def _request(
        self,
        w: RayWorkerHandle,
        op: str,
        args: tuple[Any, ...],
        timeout: float,
        *,
        who: str | None = None,
    ) -> Any:
        """One request/answer with a deadline; a missed deadline kills the actor."""
        return await self._request_locked(w, op, args, timeout)

    async def _request_locked(
        self, w: RayWorkerHandle, op: str, args: tuple[Any, ...], timeout: float
    ) -> Any:
        async with w.lock:  # one call in flight per actor, so the deadline is the call's own
            if not w.alive:
                raise WorkerDied(f"Ray actor {w.index} is gone")
            try:
                if op in ("create", "load"):
                    args = (await self._ship(w, args[0]), *args[1:])
                ok, value = await asyncio.wait_for(
                    _as_future(w.actor.handle.remote(op, args)), timeout
                )
            except TimeoutError:
                w.death = f"did not answer {op} within {timeout:g} s and was killed"
                self._kill(w)
                raise TimeoutError(op) from None
            except self._ray.exceptions.RayError as exc:  # actor died, node lost, OOM-killed
                w.death = f"was lost to Ray ({type(exc).__name__})"
                self._kill(w)
                raise WorkerDied(f"Ray actor {w.index} died: {type(exc).__name__}") from exc
        if not ok:
            raise WorkerRequestError(value)
        return value

    async def _ship(self, w: RayWorkerHandle, path: str) -> str:
        """Make sure the actor has the bundle at ``path``; return its key."""
        bundle = self._bundles.get(path)
        if bundle.key not in self._refs:
            self._refs[bundle.key] = self._ray.put(bundle)
        if bundle.key not in w.shipped:
            await asyncio.wait_for(
                _as_future(w.actor.materialize.remote(self._refs[bundle.key])), SETUP_TIMEOUT_S
            )
            w.shipped.add(bundle.key)
        return bundle.key

    async def _pick(self) -> RayWorkerHandle:
        live = [w for w in self.workers if w.alive]
        if not live:
            raise WorkerDied("no live Ray actor")
        w = min(live, key=lambda w: len(w.instances) + w.placing)
        w.placing += 1  # _pick is always followed by a "create" on w, which gives it back
        return w

    def _down(self, w: RayWorkerHandle) -> None:
        self._kill(w)

    def _after_failure(self, w: RayWorkerHandle) -> None:
        self._replace(w)

    async def _death_reason(self, w: RayWorkerHandle) -> str:
        return w.death

    # -- instances ---------------------------------------------------------------------
    async def create(self, env: str | Path, instance_id: str | None = None) -> RemoteInstance:
        """A new instance of ``env`` (id or bundle path) on the least-loaded actor."""
        if self._closed:
            raise PoolClosedError("the Ray worker pool is closed")
        path = str(resolve_env(env).resolve())
        inst = RemoteInstance(self, path, instance_id or secrets.token_hex(6))
        await inst._place()
        return inst

    def tools_of(self, path: str) -> list[ToolSpec]:
        return self._tools.get(path, [])

    def stats(self) -> dict[str, Any]:
        """Actor pids, nodes, instance counts and how many actors were replaced."""
        return {
            "workers": [
                {
                    "index": w.index,
                    "pid": w.pid,
                    "node_id": w.node_id,
                    "alive": w.alive,
                    "instances": len(w.instances),
                }
                for w in self.workers
            ],
            "replaced": self.replaced,
        }


def _as_future(ref: Any) -> asyncio.Future[Any]:
    """An ObjectRef as an asyncio future of this loop (``wait_for`` can then cancel it)."""
    return asyncio.wrap_future(ref.future())


def default_actor_count(size: int) -> int:
    """Actors for a pool of ``size`` instances when none are asked for: one per cluster CPU, at most ``size``."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init()
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(1, min(size, cpus))


__all__ = [
    "RayUnavailableError",
    "RayWorkerHandle",
    "RayWorkerPool",
    "SandboxActor",
    "default_actor_count",
]
