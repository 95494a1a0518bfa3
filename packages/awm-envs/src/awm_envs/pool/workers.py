"""One sandbox worker process as the host sees it: how it is started, its handle, its messages."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from typing import Any

from awm_envs.pool.host import Failure, WorkerRequestError
from awm_envs.pool.worker_template import ForkedWorker, WorkerTemplate
from awm_envs.sandbox import wire
from awm_envs.sandbox.isolation import Isolation
from awm_envs.sandbox.limits import GIB, Limits
from awm_envs.sandbox.process import SandboxProcess

WorkerProcess = SandboxProcess | ForkedWorker
"""A worker's process: started on its own, or forked from a pre-imported template."""

DEFAULT_CALL_TIMEOUT_S = 10.0
DEFAULT_MEMORY_LIMIT = 2 * GIB  # address space a worker may add above its start-up size
SETUP_TIMEOUT_S = 120.0  # shipping a bundle, creating an instance, a snapshot
START_TIMEOUT_S = 120.0  # a worker's interpreter start and imports (seconds on a busy machine)
IMPORT_TIMEOUT_ENV = "AWM_IMPORT_TIMEOUT_S"
DEFAULT_IMPORT_TIMEOUT_S = 60.0
WORKER_ENTRY = "awm_envs.pool.worker_main:serve"
# FastAPI, SQLAlchemy, pydantic: imported before the memory limit (worker_main itself is light,
# so that the host, which imports it too, never pays for them)
PRELOAD = (
    "awm_envs.pool.worker_main",
    "awm_envs.bundle.loader",
    "awm_envs.runtime.environment",
    "awm_envs.runtime.instance",
    "awm_core.argcheck",
    "sqlalchemy",
    "sqlalchemy.orm",
    "sqlalchemy.pool",
    "fastapi",
)
# Processes and threads one worker may have: its pids cgroup's limit where the host offers one
# (root included), else RLIMIT_NPROC, which counts every process and thread of the host uid
# and does not apply to root (docs/security.md, "process count").
WORKER_PROCESSES = 512


def start_worker_process(
    memory_limit: int | None,
    *,
    isolation: Isolation,
    name: str,
    debug: bool = False,
    scratch_prefix: str = "awm-worker-",
    template: WorkerTemplate | None = None,
) -> tuple[WorkerProcess, str | None]:
    """A sandboxed worker process (its ``ready`` message still to read) and its host folder.

    The one place a worker's limits and layout are chosen, for the process backend, the
    import preflight and each Ray actor. Under bubblewrap shipped bundles go to the
    sandbox's private ``/tmp`` and the folder is None; without it they go to a host
    folder made here, which the caller removes when the worker is gone. With a
    ``template`` the worker is forked from it (:mod:`awm_envs.pool.worker_template`),
    which keeps its folder itself.
    """
    if template is not None:
        return template.fork(memory_limit), None
    scratch = None if isolation.isolated else tempfile.mkdtemp(prefix=scratch_prefix)
    try:
        proc = SandboxProcess(
            WORKER_ENTRY,
            limits=Limits(
                memory_bytes=memory_limit or 0, open_files=1024, processes=WORKER_PROCESSES
            ),
            preload=PRELOAD,
            config={"root": scratch or "/tmp/awm-bundles"},
            isolation=isolation,
            debug=debug,
            name=name,
        )
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    return proc, scratch


def import_timeout_default() -> float:
    """The limit on importing a bundle's app.py in a worker (``AWM_IMPORT_TIMEOUT_S``, default 60)."""
    try:
        return float(os.environ.get(IMPORT_TIMEOUT_ENV, "") or DEFAULT_IMPORT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT_S


def _exitcode(proc: WorkerProcess) -> int | None:
    """Like ``multiprocessing``: None while running, negative for a signal (bubblewrap reports it as 128 + N)."""
    code = proc.proc.poll()
    forked = isinstance(proc, ForkedWorker)  # its code comes from waitpid, never bubblewrap's
    if code is not None and not forked and proc.isolation.isolated and 128 < code <= 128 + 64:
        return -(code - 128)
    return code


def kill_group(proc: WorkerProcess) -> None:
    """SIGKILL the sandbox (its whole PID namespace under bubblewrap) without waiting."""
    if proc.proc.poll() is not None:
        return
    if isinstance(proc, ForkedWorker):  # its process group, through its template
        proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.proc.kill()


class WorkerHandle:
    """The host's end of one sandbox worker."""

    def __init__(self, index: int, proc: WorkerProcess, root: str | None) -> None:
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
        self.ready.add_done_callback(retrieve)
        self.spawned = time.monotonic()
        self.start_s: float | None = None
        self.shipped: set[str] = set()
        self.loaded: set[str] = set()
        self.placing = 0
        self.failure: Failure | None = None
        self.stopped: str | None = None  # why the host stopped it, when it did
        self.exit_task: asyncio.Task[str] | None = None
        self.start_timer: asyncio.TimerHandle | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid

    @property
    def exitcode(self) -> int | None:
        """The worker process's exit code; None while it runs (see :func:`_exitcode`)."""
        return _exitcode(self.proc)

    @property
    def is_ready(self) -> bool:
        return self.ready.done() and not self.ready.cancelled() and self.ready.exception() is None

    def __repr__(self) -> str:
        return f"WorkerHandle({self.index}, pid={self.pid}, alive={self.alive}, instances={len(self.instances)})"


def retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()  # nobody may be waiting: do not log "exception was never retrieved"


def expire(fut: asyncio.Future[Any]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


def encode_request(op: str, args: tuple[Any, ...]) -> wire.Message:
    blobs: list[bytes] = []
    out: list[Any] = []
    for a in args:
        if isinstance(a, bytes | bytearray | memoryview):
            out.append({"~blob": len(blobs)})
            blobs.append(bytes(a))
        else:
            out.append(a)
    return {"op": op, "args": out}, blobs


def decode_reply(message: wire.Message) -> Any:
    header, blobs = message
    if not header.get("ok"):
        raise WorkerRequestError(str(header.get("error", "the worker refused the request")))
    if header.get("blob"):
        if len(blobs) != 1:
            raise WorkerRequestError("the worker sent a malformed reply")
        return (header["value"], blobs[0]) if "value" in header else blobs[0]
    return header.get("value")
