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
shipped to a worker as files (:mod:`awm_envs.worker`), so any worker can host
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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core.models import ToolResult, ToolSpec
from awm_envs.errors import PoolClosedError
from awm_envs.instance import error_result
from awm_envs.sandbox import wire
from awm_envs.sandbox.exits import describe_exit
from awm_envs.sandbox.isolation import Isolation, resolve
from awm_envs.sandbox.limits import GIB, Limits
from awm_envs.sandbox.process import SandboxProcess
from awm_envs.sources import resolve_env
from awm_envs.worker import result_from_wire

DEFAULT_CALL_TIMEOUT_S = 10.0
DEFAULT_MEMORY_LIMIT = 2 * GIB  # address space a worker may add above its start-up size
SETUP_TIMEOUT_S = 120.0  # shipping a bundle, creating an instance, a snapshot
START_TIMEOUT_S = 120.0  # a worker's interpreter start and imports (seconds on a busy machine)
IMPORT_TIMEOUT_ENV = "AWM_IMPORT_TIMEOUT_S"
DEFAULT_IMPORT_TIMEOUT_S = 60.0
WORKER_ENTRY = "awm_envs.worker:serve"
PRELOAD = ("awm_envs.worker",)  # FastAPI, SQLAlchemy, pydantic: imported before the memory limit
# RLIMIT_NPROC counts every process and thread of the user on the host (where it applies at
# all: not for root); the PID namespace is what bounds a tool's children.
WORKER_PROCESSES = 2048
_BUNDLE_OPS = ("create", "load", "describe")
_EXIT_WAIT_S = 2.0


def import_timeout_default() -> float:
    """The limit on importing a bundle's app.py in a worker (``AWM_IMPORT_TIMEOUT_S``, default 60)."""
    try:
        return float(os.environ.get(IMPORT_TIMEOUT_ENV, "") or DEFAULT_IMPORT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT_S


class WorkerDied(Exception):
    """The worker process is gone (crashed, killed, or timed out)."""


class WorkerRequestError(Exception):
    """The worker answered a request with an error (e.g. the bundle does not load)."""


class ImportTimeout(WorkerRequestError, TimeoutError):
    """A bundle's ``app.py`` did not finish importing within the pool's import limit."""


# --------------------------------------------------------------------------- bundles


def bundle_files(path: Path) -> dict[str, bytes]:
    """Every file of a bundle folder by relative path (caches left out): what a worker needs to load it."""
    files: dict[str, bytes] = {}
    for f in sorted(path.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files[f.relative_to(path).as_posix()] = f.read_bytes()
    return files


def bundle_digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class ShippedBundle:
    """A bundle packed for the wire: a content key, the files' names and sizes, their bytes."""

    key: str
    names: list[list[Any]]
    data: bytes

    @classmethod
    def pack(cls, path: Path) -> ShippedBundle:
        files = bundle_files(path)
        return cls(
            bundle_digest(files),
            [[name, len(data)] for name, data in files.items()],
            b"".join(files.values()),
        )


def _fingerprint(path: Path) -> tuple[Any, ...]:
    out = []
    for f in sorted(path.rglob("*")):
        if "__pycache__" in f.parts:
            continue
        with contextlib.suppress(OSError):
            st = f.stat()
            out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)


# --------------------------------------------------------------------------- worker handles


@dataclass
class _Failure:
    """Why a worker is gone, told once to each instance it hosted."""

    culprit: str | None  # the instance whose request killed it, if one did
    others: str  # what the other instances are told
    culprit_text: str  # what the culprit is told, when it is told later (an abandoned call)
    with_reason: bool  # append "(it <how the process ended>)"


class _ProcessView:
    """The ``multiprocessing.Process``-like view of a worker older callers use (pid, exitcode, kill)."""

    def __init__(self, proc: SandboxProcess) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def exitcode(self) -> int | None:
        """Like ``multiprocessing``: negative for a signal (bubblewrap reports it as 128 + N)."""
        code = self._proc.proc.poll()
        if code is not None and self._proc.isolation.isolated and 128 < code <= 128 + 64:
            return -(code - 128)
        return code

    def is_alive(self) -> bool:
        return self._proc.proc.poll() is None

    def kill(self) -> None:
        _kill_group(self._proc)

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(Exception):
            self._proc.proc.wait(timeout=timeout)


def _kill_group(proc: SandboxProcess) -> None:
    """SIGKILL the sandbox (its whole PID namespace under bubblewrap) without waiting."""
    if proc.proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.proc.kill()


class WorkerHandle:
    """The host's end of one sandbox worker."""

    def __init__(self, index: int, proc: SandboxProcess, root: str | None) -> None:
        loop = asyncio.get_running_loop()
        self.index = index  # its slot in the pool; -1 for the warm spare
        self.proc = proc
        self.root = root  # a host folder to remove when it ends (no bubblewrap only)
        self.reader = wire.FrameReader()
        self.lock = asyncio.Lock()
        self.inflight: asyncio.Future[wire.Message] | None = None
        self.orphan: wire.Message | None = None  # a reply whose caller stopped waiting
        self.current: tuple[str, str | None] = ("", None)  # the request in flight: op, instance
        self.instances: set[str] = set()
        self.alive = True
        self.ready: asyncio.Future[None] = loop.create_future()
        self.ready.add_done_callback(_retrieve)
        self.spawned = time.monotonic()
        self.start_s: float | None = None
        self.shipped: set[str] = set()
        self.loaded: set[str] = set()
        self.placing = 0
        self.failure: _Failure | None = None
        self.stopped: str | None = None  # why the host stopped it, when it did
        self.exit_task: asyncio.Task[str] | None = None
        self.start_timer: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    @property
    def process(self) -> _ProcessView:
        return _ProcessView(self.proc)

    @property
    def is_ready(self) -> bool:
        return self.ready.done() and not self.ready.cancelled() and self.ready.exception() is None

    def __repr__(self) -> str:
        return f"WorkerHandle({self.index}, pid={self.pid}, alive={self.alive}, instances={len(self.instances)})"


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()  # nobody may be waiting: do not log "exception was never retrieved"


def _expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def _encode_request(op: str, args: tuple[Any, ...]) -> wire.Message:
    blobs: list[bytes] = []
    out: list[Any] = []
    for a in args:
        if isinstance(a, bytes | bytearray | memoryview):
            out.append({"~blob": len(blobs)})
            blobs.append(bytes(a))
        else:
            out.append(a)
    return {"op": op, "args": out}, blobs


def _decode_reply(message: wire.Message) -> Any:
    header, blobs = message
    if not header.get("ok"):
        raise WorkerRequestError(str(header.get("error", "the worker refused the request")))
    if header.get("blob"):
        if len(blobs) != 1:
            raise WorkerRequestError("the worker sent a malformed reply")
        return (header["value"], blobs[0]) if "value" in header else blobs[0]
    return header.get("value")


# --------------------------------------------------------------------------- the pool


class _Retry(Exception):
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
        w.failure = _Failure(culprit, others, culprit_text or "", with_reason)
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
        failure: _Failure | None = w.failure
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


class WorkerPool(InstanceHost):
    """``workers`` sandbox processes; instances are pinned to the least-loaded one.

    Async API, one event loop: ``await pool.start()`` (or ``async with``),
    ``await pool.create(env)`` -> :class:`RemoteInstance`, ``await pool.close()``.

    ``memory_limit`` is the address space a worker may add above its
    start-up size (None: no limit); ``call_timeout`` bounds one tool call;
    ``import_timeout`` bounds importing a bundle's ``app.py`` in a worker.
    ``spare=True`` keeps one more worker started and idle, so a crashed
    worker is replaced at once instead of after an interpreter start.
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
    ) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
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
        self._tools: dict[str, list[ToolSpec]] = {}
        self._instances: dict[str, RemoteInstance] = {}
        self._bundles: dict[str, tuple[tuple[Any, ...], ShippedBundle]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._retired: list[WorkerHandle] = []
        self._last_start_error = ""
        self._spare_failures = 0

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> WorkerPool:
        """Start every worker (in parallel) and wait until each is ready."""
        if self.workers:
            return self
        if self._closed:
            raise PoolClosedError("the worker pool is closed")
        loop = asyncio.get_running_loop()
        if self.isolation is None:
            self.isolation = await loop.run_in_executor(None, resolve, self.require_isolation)
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

    async def close(self) -> None:
        """Stop every worker (and everything they started); instances become unusable."""
        if self._closed:
            return
        self._closed = True
        handles = [*self.workers, *self._retired]
        if self.spare_worker is not None:
            handles.append(self.spare_worker)
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
        root = None
        if self.isolation.isolated:
            config_root = "/tmp/awm-bundles"  # the sandbox's private tmpfs
        else:
            root = config_root = tempfile.mkdtemp(prefix="awm-worker-")
        limits = Limits(
            memory_bytes=self.memory_limit or 0, open_files=1024, processes=WORKER_PROCESSES
        )
        try:
            proc = SandboxProcess(
                WORKER_ENTRY,
                limits=limits,
                preload=PRELOAD,
                config={"root": config_root},
                isolation=self.isolation,
                debug=self.debug,
                name=f"awm-worker-{index}",
            )
        except BaseException:
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)
            raise
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
                f"{exc} (it {reason}); run with debug=True to see its stderr"
            ) from None

    def _start_timed_out(self, w: WorkerHandle) -> None:
        if not w.ready.done():
            self._stop(w, f"did not start within {START_TIMEOUT_S:g} s and was stopped")

    async def _warm(self, w: WorkerHandle) -> None:
        """A ready spare imports the pool's environments at once, so that the instances
        recreated on it after a crash need no import: replacement is immediate."""
        for path in list(self._tools):
            if not w.alive or self._closed:
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
        if not self.spare or self._closed or self.spare_worker is not None:
            return
        try:
            self.spare_worker = self._spawn(-1)
        except OSError as exc:
            self._last_start_error = str(exc)

    # -- the channel -------------------------------------------------------------------
    def _on_readable(self, w: WorkerHandle) -> None:
        try:
            data = w.proc.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._channel_lost(w)
            return
        try:
            messages = w.reader.feed(data)
        except wire.ProtocolError as exc:
            self._channel_lost(w, f"sent a malformed message ({exc}) and was stopped")
            return
        for message in messages:
            if not w.ready.done():
                if not message[0].get("ready"):
                    self._channel_lost(
                        w, "sent something before its start-up message and was stopped"
                    )
                    return
                if w.start_timer is not None:
                    w.start_timer.cancel()
                w.start_s = time.monotonic() - w.spawned
                w.ready.set_result(None)
                if w.index < 0:
                    self._task(self._warm(w))
                continue
            fut, w.inflight = w.inflight, None
            if fut is None:
                self._channel_lost(w, "sent a message nobody asked for and was stopped")
                return
            if fut.done():  # its caller was cancelled, or its deadline passed this loop turn
                w.orphan = message
            else:
                fut.set_result(message)

    def _detach(self, w: WorkerHandle) -> bool:
        """Stop listening to a worker; False if that was already done."""
        if not w.alive:
            return False
        w.alive = False
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(w.proc.fileno())
        if w.start_timer is not None:
            w.start_timer.cancel()
        return True

    def _channel_lost(self, w: WorkerHandle, problem: str | None = None) -> None:
        """The worker closed its channel (it died) or broke the protocol (``problem``)."""
        if not self._detach(w):
            return
        if problem is not None:
            w.stopped = problem
            _kill_group(w.proc)
        self._bury(w)
        if not w.ready.done():
            w.ready.set_exception(WorkerDied(f"sandbox worker {w.index} did not start"))
            return
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerDied(f"sandbox worker {w.index} died"))
            return
        if fut is not None:  # a request whose caller had just stopped waiting for it
            op, who = w.current
            self._on_failure(
                w,
                who,
                f"another instance's {op} request crashed the shared environment worker",
                culprit_text=f"your previous {op} request (its caller had stopped waiting) "
                "crashed the environment worker",
            )
            return
        self._on_failure(w, None, "the environment worker hosting this instance died between calls")

    def _stop(self, w: WorkerHandle, why: str) -> None:
        """Kill a worker now (a missed deadline, the pool closing)."""
        if not self._detach(w):
            return
        w.stopped = why
        _kill_group(w.proc)
        self._bury(w)
        if not w.ready.done():
            w.ready.set_exception(WorkerDied(f"sandbox worker {w.index} {why}"))
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerDied(f"sandbox worker {w.index} {why}"))

    def _bury(self, w: WorkerHandle) -> None:
        if w.exit_task is None:
            w.exit_task = self._task(self._reap(w))

    async def _reap(self, w: WorkerHandle) -> str:
        """Wait for the exit status (killing it if it lingers); how it ended, in words."""
        proc = w.proc.proc
        deadline = time.monotonic() + _EXIT_WAIT_S
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        lingered = proc.poll() is None
        if lingered:
            _kill_group(w.proc)
            for _ in range(500):
                if proc.poll() is not None:
                    break
                await asyncio.sleep(0.01)
        with contextlib.suppress(OSError):
            w.proc.sock.close()
        if w.root is not None:
            shutil.rmtree(w.root, ignore_errors=True)
        if w.stopped is not None:
            return w.stopped
        if lingered:
            return "closed its channel to the host and was stopped"
        return describe_exit(proc.returncode)

    async def _death_reason(self, w: WorkerHandle) -> str:
        self._bury(w)
        assert w.exit_task is not None
        return await asyncio.shield(w.exit_task)

    def _task(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_retrieve)
        return task

    # -- requests ----------------------------------------------------------------------
    async def _request(
        self,
        w: WorkerHandle,
        op: str,
        args: tuple[Any, ...],
        timeout: float,
        *,
        who: str | None = None,
    ) -> Any:
        """One request/answer with a deadline; a missed deadline stops the worker.

        ``who`` is the instance the request is for (blamed if it kills the
        worker after its caller stopped waiting).
        """
        await w.lock.acquire()
        handed_off = False
        try:
            if not w.alive:
                raise WorkerDied(f"sandbox worker {w.index} is gone")
            path = None
            if op in _BUNDLE_OPS:
                path = str(args[0])
                bundle = self._bundle(path)
                if bundle.key not in w.shipped:
                    await self._exchange(
                        w,
                        _encode_request("ship", (bundle.key, path, bundle.names, bundle.data)),
                        self.setup_timeout,
                        op,
                        who,
                    )
                    w.shipped.add(bundle.key)
                args = (bundle.key, *args[1:])
                if bundle.key not in w.loaded:
                    timeout = self.import_timeout
            try:
                value = await self._exchange(w, _encode_request(op, args), timeout, op, who)
            except TimeoutError:
                if path is not None and args[0] not in w.loaded:
                    raise ImportTimeout(
                        f"{Path(path) / 'app.py'} did not finish importing within "
                        f"{timeout:g} s (the import limit, {IMPORT_TIMEOUT_ENV}; an infinite loop "
                        "or a blocking call at import time?); the worker importing it was stopped"
                    ) from None
                raise
            if path is not None:
                w.loaded.add(args[0])
            return value
        except _HandedOff:
            handed_off = True
            raise asyncio.CancelledError() from None
        finally:
            if not handed_off:
                w.lock.release()

    async def _exchange(
        self, w: WorkerHandle, message: wire.Message, timeout: float, op: str, who: str | None
    ) -> Any:
        """Send one message and wait for its answer (the worker's lock is held).

        The hot path awaits the reply future directly under a timer (no ``wait_for``
        or ``shield``: a tool call costs the host a few tens of microseconds). A
        reply that arrives after its caller was cancelled, or in the same loop
        turn as its deadline, is kept in ``w.orphan``.
        """
        loop = asyncio.get_running_loop()
        data = wire.encode(*message)
        fut: asyncio.Future[wire.Message] = loop.create_future()
        w.inflight = fut
        w.orphan = None
        w.current = (op, who)
        deadline = loop.time() + timeout
        try:
            sent = w.proc.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            w.inflight = None
            self._channel_lost(w)  # it was already gone: not this request's doing
            raise WorkerDied(f"sandbox worker {w.index} is gone") from None
        timer = loop.call_later(timeout, _expire, fut)
        try:
            if sent < len(data):  # the rest in a task of its own: never half a message
                sending = asyncio.ensure_future(
                    loop.sock_sendall(w.proc.sock, memoryview(data)[sent:])
                )
                try:
                    await asyncio.wait_for(asyncio.shield(sending), timeout)
                except TimeoutError:
                    self._stop(w, f"stopped reading its requests for {timeout:g} s and was stopped")
                    raise WorkerDied(f"sandbox worker {w.index} stopped reading") from None
                except OSError:
                    pass  # it died: the channel's end says so through ``fut``
            reply = await fut
        except asyncio.CancelledError:
            # The caller stopped waiting. If the worker still owes the answer, it keeps
            # running the request: hold its lock until it answers or misses the deadline.
            orphan, w.orphan = w.orphan, None
            if orphan is not None or (fut.done() and not fut.cancelled()) or not w.alive:
                raise
            if fut.cancelled():
                fut = loop.create_future()
                w.inflight = fut
            self._task(self._abandoned(w, fut, deadline, op, who))
            raise _HandedOff() from None
        except TimeoutError:
            orphan, w.orphan = w.orphan, None
            if orphan is not None:  # it answered in the very loop turn of its deadline
                return _decode_reply(orphan)
            w.inflight = None
            self._stop(w, f"did not answer {op} within {timeout:g} s and was stopped")
            raise TimeoutError(op) from None
        finally:
            timer.cancel()
        return _decode_reply(reply)

    async def _abandoned(
        self,
        w: WorkerHandle,
        fut: asyncio.Future[wire.Message],
        deadline: float,
        op: str,
        who: str | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(fut, max(0.0, deadline - loop.time()))
        except TimeoutError:
            w.inflight = None
            self._stop(w, f"did not answer {op} in time and was stopped")
            what = f"did not finish within its {self._limit_for(op):g} s limit"
            self._on_failure(
                w,
                who,
                f"another instance's {op} request {what}, so the shared environment worker was stopped",
                culprit_text=f"your previous {op} request {what} (its caller had stopped waiting), "
                "so the environment worker was stopped",
                with_reason=False,
            )
        except WorkerDied:
            self._on_failure(
                w,
                who,
                f"another instance's {op} request crashed the shared environment worker",
                culprit_text=f"your previous {op} request (its caller had stopped waiting) crashed "
                "the environment worker",
            )
        except Exception:
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                w.lock.release()

    def _limit_for(self, op: str) -> float:
        return self.call_timeout if op == "call" else self.setup_timeout

    def _bundle(self, path: str) -> ShippedBundle:
        folder = Path(path)
        print_ = _fingerprint(folder)
        cached = self._bundles.get(path)
        if cached is not None and not print_:
            return cached[1]  # the folder is gone: workers keep loading the copy shipped so far
        if cached is None or cached[0] != print_:
            cached = (print_, ShippedBundle.pack(folder))
            self._bundles[path] = cached
        return cached[1]

    # -- placement and failures (the host protocol RemoteInstance uses) --------------------
    async def _pick(self) -> WorkerHandle:
        """The least-loaded live worker, waiting for it if it is still starting (a replacement).

        Load counts instances and creates under way, so a burst of creates, or the
        instances of a crashed worker coming back, spread evenly instead of piling
        onto whichever worker happens to be ready first.
        """
        revived = False
        while True:
            if self._closed:
                raise PoolClosedError("the worker pool is closed")
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
        if self._closed or w.alive or w.index < 0 or self.workers[w.index] is not w:
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
        if self._closed:
            raise PoolClosedError("the worker pool is closed")
        path = str(resolve_env(env).resolve())
        iid = instance_id or secrets.token_hex(6)
        inst = RemoteInstance(self, path, iid)
        await inst._place()
        return inst

    async def load(self, env: str | Path) -> list[ToolSpec]:
        """The tools of ``env``, from a worker (its app.py is imported there, never here)."""
        if self._closed:
            raise PoolClosedError("the worker pool is closed")
        path = str(resolve_env(env).resolve())
        if path not in self._tools:
            for attempt in range(3):
                w = await self._pick()
                try:
                    tools = await _bundle_request(self, w, "load", (path,), None, path)
                    break
                except _Retry:
                    if attempt == 2:
                        raise WorkerDied(
                            "sandbox workers kept dying while loading the bundle"
                        ) from None
                finally:
                    self._placed(w)
            self._tools[path] = _tool_specs(tools)
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


def _tool_specs(data: Any) -> list[ToolSpec]:
    try:
        return [ToolSpec.model_validate(t) for t in data]
    except (TypeError, ValueError) as exc:
        raise WorkerRequestError(
            f"the environment worker sent malformed tool specs: {exc}"
        ) from None


class _HandedOff(Exception):
    """Internal: a cancelled request whose worker lock now belongs to a background task."""


async def _bundle_request(
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
            raise _Retry() from None  # the worker died of something else while this waited
        if isinstance(exc, TimeoutError):
            raise
        reason = await pool._death_reason(w)
        raise WorkerDied(
            f"the sandbox worker died while loading {Path(path) / 'app.py'} (it {reason})"
        ) from None


class RemoteInstance:
    """An instance living in a sandbox worker (implements ``EnvSession``; async only).

    ``pool`` is a :class:`WorkerPool` or a
    :class:`~awm_envs.ray_backend.RayWorkerPool`: both offer the same host
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

    async def _place(self) -> None:
        for attempt in range(3):
            w = await self.pool._pick()
            try:
                tools = await _bundle_request(
                    self.pool, w, "create", (self.env_path, self.id), self.id, self.env_path
                )
                break
            except _Retry:
                if attempt == 2:
                    raise WorkerDied(
                        "sandbox workers kept dying while this instance was created"
                    ) from None
            finally:
                self.pool._placed(w)
        self.pool._tools[self.env_path] = _tool_specs(tools)
        w.instances.add(self.id)
        self.worker = w
        self._lost = False
        self.pool._instances[self.id] = self

    async def _recreate(self) -> None:
        """A fresh instance from the template on a live worker, in place of the lost one."""
        await self._place()
        self.recreated += 1

    async def list_tools(self) -> list[ToolSpec]:
        return self.pool.tools_of(self.env_path)  # type: ignore[no-any-return]

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
            pool._on_failure(
                w,
                self.id,
                f"another instance's call to {name} crashed the shared environment worker",
            )
            if self._notice is not None:  # it was someone else's doing
                return await self._tell(name)
            self._lost = True
            reason = await pool._death_reason(w)
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
        image = await self._simple("snapshot")
        if not isinstance(image, bytes):
            raise WorkerRequestError("the environment worker sent a snapshot that is not bytes")
        return image

    async def restore(self, image: bytes) -> None:
        self._notice = None
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
                await self.pool._request(
                    w, "close", (self.id,), self.pool.setup_timeout, who=self.id
                )

    @property
    def pid(self) -> int | None:
        pid: int | None = self.worker.pid if self.worker else None
        return pid

    def __repr__(self) -> str:
        return f"RemoteInstance({self.id!r}, worker={self.worker.index if self.worker else None}, pid={self.pid})"


__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_MEMORY_LIMIT",
    "ImportTimeout",
    "InstanceHost",
    "RemoteInstance",
    "WorkerDied",
    "WorkerPool",
    "WorkerRequestError",
    "bundle_files",
]
