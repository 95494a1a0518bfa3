"""Run verifier code in a pool of reusable, resource-limited worker subprocesses.

Why subprocesses: verifiers are generated code. The official release ``exec``s
them in the trainer's own process with full builtins, so one infinite loop or
memory bomb stalls or kills a whole training step. Here each verification runs
in a warm worker (see :mod:`awm_verify._sandbox_worker` for the layers of
containment) and every failure mode comes back as a typed
:class:`VerifierError` inside a :class:`VerifierResult`; the caller never sees an
exception from verifier code.

Workers are reused between verifications (start-up costs tens of milliseconds,
a verification well under one), and replaced after a timeout, a memory error or
a crash, and after ``max_jobs_per_worker`` jobs.

    with VerifierPool(size=2) as pool:
        result = pool.run(source, initial=before_bytes, final=after_bytes,
                          function="verify_cancel_order", final_answer="Cancelled.")
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import queue
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_core.errors import AWMError
from awm_verify.signatures import (
    BadVerifierOutput,
    DetectedVerifier,
    VerifierSignatureError,
    detect,
)
from awm_verify.snapshot import DatabaseSource, load_image

WORKER_SCRIPT = Path(__file__).with_name("_sandbox_worker.py")


class VerifierErrorKind(StrEnum):
    """Why a verifier produced no usable result."""

    EXCEPTION = "exception"  # it raised
    TIMEOUT = "timeout"  # CPU budget or wall clock exceeded
    MEMORY = "memory"  # address-space limit hit
    BAD_OUTPUT = "bad_output"  # returned something its signature does not allow
    FORBIDDEN = "forbidden"  # tried I/O, a process, a socket, a write, a non-allowed import
    INVALID = "invalid"  # source does not compile, function missing, unknown signature
    CRASH = "crash"  # the worker process died for another reason


class VerifierError(BaseModel):
    """A typed verifier failure: what kind, a message to act on, the verifier's traceback."""

    model_config = ConfigDict(extra="forbid")

    kind: VerifierErrorKind
    message: str
    traceback: str | None = None


class VerifierResult(BaseModel):
    """The outcome of one verification, successful or not."""

    model_config = ConfigDict(extra="forbid")

    function: str
    signature: str = Field(description="The adapter that called it: native, verify_task, ...")
    complete: bool | None = Field(
        default=None, description="The verifier's verdict; None when it gives evidence only."
    )
    evidence: dict[str, Any] = Field(default_factory=dict)
    error: VerifierError | None = None
    duration_s: float = 0.0
    stdout: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class SandboxError(AWMError):
    """The sandbox itself could not run (the worker would not start): not the verifier's fault."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-verification limits. The wall clock is the last resort behind the CPU budget."""

    cpu_s: float = 5.0
    wall_s: float = 10.0
    memory_bytes: int = 512 * 1024 * 1024
    max_output_bytes: int = 256 * 1024


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Let a whole request sit in the pipe (Linux), so the write never waits on the worker."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (ImportError, OSError):
        pass  # other platforms, or over /proc/sys/fs/pipe-max-size: the default pipe works


class _Worker:
    """One worker subprocess and its protocol pipes."""

    def __init__(self, limits: SandboxLimits, debug: bool) -> None:
        config = json.dumps(
            {"memory_limit_bytes": limits.memory_bytes, "max_output_bytes": limits.max_output_bytes}
        )
        # A scrubbed environment: verifier code must not see API keys or tokens.
        env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0"}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", str(WORKER_SCRIPT), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.DEVNULL,
            env=env,
            close_fds=True,
            start_new_session=True,  # a verifier's signals never reach the host's group
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        _grow_pipe(self._in)
        _grow_pipe(self._out)
        self.jobs = 0
        ready = self.read(30.0)
        if ready is None or not ready.get("ready"):
            self.kill()
            raise SandboxError(
                f"the verifier worker did not start (python {sys.executable}); "
                "run with VerifierPool(debug=True) to see its stderr"
            )

    def send(self, header: dict[str, Any], blobs: list[bytes]) -> None:
        data = _frame(json.dumps(header).encode()) + b"".join(_frame(b) for b in blobs)
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view) :]

    def _read_exact(self, n: int, deadline: float) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._out, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next reply, or None when ``timeout`` passes. Raises EOFError if the worker died."""
        deadline = time.monotonic() + timeout
        head = self._read_exact(4, deadline)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        body = self._read_exact(n, deadline)
        if body is None:
            return None
        reply: dict[str, Any] = json.loads(body)
        return reply

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


class VerifierPool:
    """A thread-safe pool of sandbox workers.

    ``run`` blocks the calling thread; ``arun`` awaits it on a thread so an
    asyncio trainer can verify one batch while rolling out the next.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        limits: SandboxLimits | None = None,
        max_jobs_per_worker: int = 500,
        debug: bool = False,
        tmp_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a VerifierPool needs at least one worker")
        self.size = size
        self.limits = limits or SandboxLimits()
        self.max_jobs_per_worker = max_jobs_per_worker
        self.debug = debug
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        for _ in range(size):
            self._idle.put(None)  # a slot; the worker starts on first use
        self._tmp = tempfile.mkdtemp(prefix="awm-verify-", dir=tmp_dir)
        os.chmod(self._tmp, 0o700)
        self._ids = itertools.count(1)
        self._closed = False
        self._lock = threading.Lock()
        self._workers: set[_Worker] = set()

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> VerifierPool:
        """Start every worker now instead of on first use (keeps start-up out of timings)."""
        slots = [self._idle.get() for _ in range(self.size)]
        try:
            slots = [w if w is not None and w.alive() else self._spawn() for w in slots]
        finally:
            for w in slots:
                self._idle.put(w)
        return self

    def close(self) -> None:
        """Stop every worker and remove the private temp folder."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            workers = list(self._workers)
        for w in workers:
            w.kill()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()

    def _spawn(self) -> _Worker:
        w = _Worker(self.limits, self.debug)
        with self._lock:
            self._workers.add(w)
        return w

    def _retire(self, w: _Worker) -> None:
        w.kill()
        with self._lock:
            self._workers.discard(w)

    # -- running -----------------------------------------------------------

    def run(
        self,
        source: str,
        *,
        initial: DatabaseSource,
        final: DatabaseSource,
        function: str | None = None,
        final_answer: str | None = None,
        limits: SandboxLimits | None = None,
    ) -> VerifierResult:
        """Verify once. Verifier failures come back in ``result.error``; never raises for them."""
        if self._closed:
            raise SandboxError("this VerifierPool is closed; create a new one")
        started = time.perf_counter()
        lim = limits or self.limits
        try:
            found = detect(source, function)
        except VerifierSignatureError as exc:
            return VerifierResult(
                function=function or "?",
                signature="unknown",
                error=VerifierError(kind=VerifierErrorKind.INVALID, message=str(exc)),
            )
        images = [load_image(initial), load_image(final)]
        job_id = next(self._ids)
        paths: list[str] = []
        blobs: list[bytes] = []
        if found.adapter.call_style == "paths":
            for label, image in zip(("initial", "final"), images, strict=True):
                p = os.path.join(self._tmp, f"job{job_id}-{label}.db")
                with open(p, "wb") as f:
                    f.write(image)
                os.chmod(p, 0o400)
                paths.append(p)
        else:
            blobs = images
        header = {
            "id": job_id,
            "source": source,
            "function": found.function,
            "style": found.adapter.call_style,
            "paths": paths,
            "blobs": len(blobs),
            "pass_final_answer": found.argument_count() == 3,
            "final_answer": final_answer,
            "cpu_limit_s": lim.cpu_s,
        }
        try:
            reply = self._exchange(header, blobs, lim.wall_s)
        finally:
            for p in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
        return self._result(found, reply, time.perf_counter() - started)

    async def arun(self, source: str, **kwargs: Any) -> VerifierResult:
        """``run`` on a worker thread, for asyncio callers."""
        return await asyncio.to_thread(self.run, source, **kwargs)

    def _exchange(
        self, header: dict[str, Any], blobs: list[bytes], wall_s: float
    ) -> dict[str, Any]:
        w = self._idle.get()
        try:
            if w is None or not w.alive():
                if w is not None:
                    self._retire(w)
                w = self._spawn()
            try:
                w.send(header, blobs)
                reply = w.read(wall_s)
            except (EOFError, BrokenPipeError, OSError):
                w.proc.wait(timeout=5)
                code = w.proc.returncode
                self._retire(w)
                w = None
                return {
                    "status": "error",
                    "kind": "crash",
                    "message": f"the verifier worker died (exit status {code}) while running the verifier",
                }
            if reply is None:
                self._retire(w)
                w = None
                return {
                    "status": "error",
                    "kind": "timeout",
                    "message": f"the verifier ran longer than the {wall_s:g} s wall-clock limit and was killed",
                }
            w.jobs += 1
            if reply.get("recycle") or w.jobs >= self.max_jobs_per_worker:
                self._retire(w)
                w = None
            return reply
        finally:
            self._idle.put(w)

    def _result(
        self, found: DetectedVerifier, reply: dict[str, Any], elapsed: float
    ) -> VerifierResult:
        base = VerifierResult(
            function=found.function,
            signature=found.adapter.name,
            duration_s=elapsed,
            stdout=str(reply.get("stdout", "")),
        )
        if reply.get("status") != "ok":
            base.error = VerifierError(
                kind=VerifierErrorKind(reply.get("kind", "crash")),
                message=str(reply.get("message", "unknown failure")),
                traceback=reply.get("traceback"),
            )
            return base
        try:
            raw = json.loads(reply["result_json"])
            base.complete, base.evidence = found.adapter.interpret(raw)
        except (BadVerifierOutput, KeyError, ValueError) as exc:
            base.error = VerifierError(kind=VerifierErrorKind.BAD_OUTPUT, message=str(exc))
        return base


_default_pool: VerifierPool | None = None
_default_lock = threading.Lock()


def default_pool() -> VerifierPool:
    """A process-wide pool (two workers), created on first use and closed at exit."""
    global _default_pool
    with _default_lock:
        if _default_pool is None or _default_pool._closed:
            import atexit

            _default_pool = VerifierPool(size=2)
            atexit.register(_default_pool.close)
        return _default_pool


def run_verifier(
    source: str,
    *,
    initial: DatabaseSource,
    final: DatabaseSource,
    function: str | None = None,
    final_answer: str | None = None,
) -> VerifierResult:
    """Verify once on the default pool."""
    return default_pool().run(
        source, initial=initial, final=final, function=function, final_answer=final_answer
    )
