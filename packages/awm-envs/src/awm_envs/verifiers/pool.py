"""Run verifier code in awm's sandbox: a fresh fork of a clean template for every verification.

Why: verifiers are generated code. The official release ``exec``s them in the
trainer's own process with full builtins, so one infinite loop or memory bomb
stalls or kills a whole training step, and one verifier that rebinds a builtin
changes every later verdict. Here each verification runs in a child forked for
it alone from a pre-imported template inside the OS sandbox
(:mod:`awm_envs.sandbox`: bubblewrap, rlimits, and the Python-level policy of
:mod:`awm_envs.verifiers.job`), so nothing one verifier does reaches the
next, and every failure mode comes back as a typed :class:`VerifierError`
inside a :class:`VerifierResult`; the caller never sees an exception from
verifier code.

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
import shutil
import tempfile
import threading
import time
from typing import Any

from awm_core.errors import AWMError
from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult
from awm_core.snapshot import DatabaseSource, load_image
from awm_envs.sandbox import JobPool, Limits, SandboxStartError
from awm_envs.verifiers.signatures import (
    BadVerifierOutput,
    DetectedVerifier,
    VerifierSignatureError,
    detect,
)

VERIFIER_JOB = "awm_envs.verifiers.job:run"

# One verification's limits: the sandbox's defaults, and a verifier's output (its result as
# JSON) capped at 256 KiB. Start from these to change one: ``VERIFIER_LIMITS.with_(cpu_s=1)``.
VERIFIER_LIMITS = Limits(max_output_bytes=256 * 1024)

_KINDS = {k.value for k in VerifierErrorKind}


class SandboxError(AWMError):
    """The sandbox itself could not run (the worker would not start): not the verifier's fault."""


class VerifierPool:
    """A thread-safe pool of verifier sandboxes.

    ``size`` templates run verifications in parallel; each verification is a
    fresh fork. ``run`` blocks the calling thread; ``arun`` awaits it on a
    thread so an asyncio trainer can verify one batch while rolling out the
    next. ``require_isolation`` (or ``AWM_REQUIRE_ISOLATION=1``) refuses to
    run where bubblewrap is unavailable instead of warning. ``limits.max_output_bytes``
    caps what a verifier may return (see :data:`VERIFIER_LIMITS`).

    Inside a sandbox already (a synthesis check validating a bundle), each
    verification is a fork of this process instead: same policy, same limits,
    a process of its own, and no sandbox nested in a sandbox.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        limits: Limits | None = None,
        debug: bool = False,
        tmp_dir: str | os.PathLike[str] | None = None,
        require_isolation: bool | None = None,
    ) -> None:
        if size < 1:
            raise ValueError("a VerifierPool needs at least one worker")
        self.size = size
        self.limits = limits or VERIFIER_LIMITS
        self.debug = debug
        self._tmp = tempfile.mkdtemp(prefix="awm-verify-", dir=tmp_dir)
        os.chmod(self._tmp, 0o700)
        from awm_envs.sandbox.boot import inside_sandbox

        self._jobs: JobPool | None = None
        self.isolation: Any = None
        if not inside_sandbox():
            self._jobs = JobPool(
                VERIFIER_JOB,
                size=size,
                limits=self._os_limits(self.limits),
                ro_paths=[self._tmp],  # database copies of "paths"-style verifiers, read-only
                require_isolation=require_isolation,
                debug=debug,
            )
            self.isolation = self._jobs.isolation
        self._ids = itertools.count(1)
        self._closed = False
        self._lock = threading.Lock()

    @staticmethod
    def _os_limits(limits: Limits) -> Limits:
        # the reply carries the verifier's output, its stdout and any error: room for those
        return limits.with_(max_output_bytes=limits.max_output_bytes + 64 * 1024)

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> VerifierPool:
        """Start every template now instead of on first use (keeps start-up out of timings)."""
        try:
            if self._jobs is not None:
                self._jobs.start()
        except SandboxStartError as exc:
            raise SandboxError(str(exc)) from exc
        return self

    def close(self) -> None:
        """Stop every template and remove the private temp folder."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._jobs is not None:
            self._jobs.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> VerifierPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()

    # -- running -----------------------------------------------------------

    def run(
        self,
        source: str,
        *,
        initial: DatabaseSource,
        final: DatabaseSource,
        function: str | None = None,
        final_answer: str | None = None,
        limits: Limits | None = None,
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
                os.chmod(p, 0o444)
                paths.append(p)
        else:
            blobs = images
        header = {
            "id": job_id,
            "source": source,
            "function": found.function,
            "style": found.adapter.call_style,
            "paths": paths,
            "pass_final_answer": found.argument_count() == 3,
            "final_answer": final_answer,
            "cpu_limit_s": lim.cpu_s,
            "max_output_bytes": lim.max_output_bytes,
        }
        try:
            reply = self._reply(header, blobs, self._os_limits(lim))
        except SandboxStartError as exc:
            raise SandboxError(str(exc)) from exc
        finally:
            for p in paths:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
        return self._result(found, reply, time.perf_counter() - started)

    def _reply(self, header: dict[str, Any], blobs: list[bytes], limits: Limits) -> dict[str, Any]:
        if self._jobs is not None:
            reply: dict[str, Any] = self._jobs.run(header, blobs, limits)[0]
            return reply
        from awm_envs.sandbox.forkhost import run_in_fork
        from awm_envs.verifiers import job

        job.sandbox_prepare_once()
        reply, _ = run_in_fork(job.run, header, blobs, limits.to_json())
        return reply

    async def arun(self, source: str, **kwargs: Any) -> VerifierResult:
        """``run`` on a worker thread, for asyncio callers."""
        return await asyncio.to_thread(self.run, source, **kwargs)

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
            kind = str(reply.get("kind", "crash"))
            base.error = VerifierError(
                kind=VerifierErrorKind(kind if kind in _KINDS else "crash"),
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
