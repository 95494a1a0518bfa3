"""Run the pipeline's execution checks of generated code out of process, under time and memory limits.

Generated apps and verifiers are untrusted: an app may loop forever at import,
``os._exit`` inside a tool, or allocate until the machine swaps. None of that
may stop or kill a synthesis run, so no generated code runs in the pipeline's
own process:

* the candidate app is written as a bundle folder and hosted by the awm-envs
  runtime's sandboxed worker (:class:`awm_envs.WorkerPool`): the same
  loader, argument validation and dispatch an agent meets later, with a
  deadline on every call and an address-space limit;
* verifiers run in awm-envs' :class:`~awm_envs.verifiers.pool.VerifierPool`, the
  sandbox that judges rollouts at training time (so a verifier that imports
  ``os`` fails here, where it can still be repaired, not during training);
* anything else that must import generated code (the runtime's final
  validation of a packaged bundle, and locating the app.py line of a crash for
  the feedback) runs in a one-shot child process (:func:`run_isolated`).

Every failure becomes a message for the correction loop. A :class:`CheckSandbox`
is shared by a whole run: its ``slots`` (the CPU count by default) bound how
many checks run at once, so checks of different environments use every core
while the event loop only waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core.models import ToolResult, ToolSpec, VerifierResult
from awm_envs import (
    RemoteInstance,
    WorkerDied,
    WorkerPool,
    WorkerRequestError,
)
from awm_envs.sandbox import JobPool, Limits, SandboxStartError, describe_exit
from awm_envs.verifiers.pool import VERIFIER_LIMITS, SandboxError, VerifierPool
from awm_synth.checks.apprunner import AppLoadError
from awm_synth.errors import SynthError

GIB = 1024**3


@dataclass(frozen=True)
class CheckLimits:
    """Limits on one check of generated code. A limit reached is an error fed back, never a stall."""

    startup_s: float = 30.0  # load app.py in a worker: import, routes, tool schemas
    call_s: float = 10.0  # one tool call
    check_s: float = 300.0  # all calls of one check together (a hanging app costs call_s each)
    memory_bytes: int = 1 * GIB  # address space of a worker or child
    verifier_cpu_s: float = 5.0
    verifier_wall_s: float = 10.0
    package_s: float = 300.0  # the runtime's validation of a finished bundle


class SandboxUnavailableError(SynthError):
    """A sandbox process could not be started at all: the machine's fault, not the candidate's.

    The scenario is reported as failed and not checkpointed, so a resumed run
    tries it again.
    """


class IsolatedRunError(SynthError):
    """A child started by :func:`run_isolated` timed out, died, or raised; ``cause`` says which."""

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message


def cpu_slots() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------- child processes

ISOLATED_JOB = "awm_synth.checks.isolated:job"


def _exit_detail(exitcode: int | None) -> str:
    return f"it {describe_exit(exitcode)}"


def _startup_death(exc: WorkerDied) -> str:
    """How the worker that was loading app.py ended (``it exited with status 3 ...``)."""
    return f"it {exc.reason}" if exc.reason else str(exc)


async def run_isolated(
    jobs: JobPool,
    fn: str,
    *args: Any,
    blobs: Sequence[bytes] = (),
    timeout: float,
    memory_limit: int | None,
) -> Any:
    """Run the check ``fn`` of :mod:`awm_synth.checks.isolated` in a fresh fork of a sandbox template.

    A check that outlives ``timeout`` is killed; one that dies, or raises,
    ends in :class:`IsolatedRunError` with a message for the model.
    """
    limits = jobs.limits.with_(wall_s=timeout, cpu_s=timeout, memory_bytes=memory_limit or None)
    try:
        reply, _ = await jobs.arun({"fn": fn, "args": list(args)}, list(blobs), limits)
    except (SandboxStartError, OSError) as exc:
        raise SandboxUnavailableError(f"the sandbox for checks did not start: {exc}") from exc
    if reply.get("status") == "ok":
        return reply.get("value")
    kind, message = str(reply.get("kind", "crash")), str(reply.get("message", ""))
    if kind == "timeout":
        raise IsolatedRunError("timeout", f"did not finish within {timeout:g} s and was stopped")
    if kind in ("crash", "memory"):
        raise IsolatedRunError("crash", f"its process died: {message}")
    raise IsolatedRunError("error", message)


# --------------------------------------------------------------------------- candidate bundles


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8") if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:24]


def stage_candidate(root: Path, files: dict[str, str]) -> Path:
    """Write a candidate bundle under ``root`` in a folder named by its content; return the folder.

    Content naming makes staging idempotent: the same candidate (a resumed
    run, cloned scenarios) is written once, and a half-written folder is
    never visible (it is renamed into place).
    """
    folder = root / _digest(*(f"{k}\0{v}" for k, v in sorted(files.items())))
    if folder.is_dir():
        return folder
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    try:
        tmp.rename(folder)
    except OSError:  # another check staged the same content first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


_PROBLEM_LINE = re.compile(r"^\s*- (?P<file>[^:]+): (?:(?P<field>.*?): )?(?P<message>.*)$")
_IMPORT_LINE = re.compile(r"^line (\d+)$")


def load_error(message: str, folder: Path, source: str) -> AppLoadError:
    """Turn the runtime's refusal to load a candidate into the code stage's fatal error.

    An import failure keeps today's shape (``app.py failed to import: ... (app.py
    line N: <the line>)``); every other app.py problem (no ``app``, a route
    without an ``operation_id``, duplicate tool names, schemas that cannot be
    derived) is a start-up error listing each problem.
    """
    text = message.replace(str(folder.resolve()), "app").replace(str(folder), "app")
    lines = source.splitlines()
    app_problems: list[str] = []
    other: list[str] = []
    for raw in text.splitlines()[1:] or [text]:
        m = _PROBLEM_LINE.match(raw)
        if m is None:
            other.append(raw.strip())
            continue
        file, where, msg = m["file"], m["field"] or "", m["message"]
        if file == "app.py" and msg.startswith("import failed: "):
            detail = msg.removeprefix("import failed: ")
            line = _IMPORT_LINE.match(where)
            if line:
                n = int(line.group(1))
                code = lines[n - 1].strip()[:100] if 0 < n <= len(lines) else ""
                detail += f" (app.py line {n}: {code})" if code else f" (app.py line {n})"
            return AppLoadError("import_error", f"app.py failed to import: {detail}")
        if "is also used by" in msg:
            msg += "; tool names must be unique"
        (app_problems if file == "app.py" else other).append(
            f"{file}: {where}: {msg}" if where else f"{file}: {msg}"
        )
    if app_problems:
        return AppLoadError("startup_error", "; ".join(app_problems))
    if any("out of memory" in p for p in other):
        return AppLoadError(
            "startup_memory", "loading app.py ran out of memory (the check's memory limit)"
        )
    return AppLoadError("bundle_error", "the candidate bundle does not load: " + "; ".join(other))


# --------------------------------------------------------------------------- a hosted candidate app


@dataclass
class CallOutcome:
    """One sandboxed tool call: the runtime's result, and a failure kind when it failed.

    ``kind`` is None for success, ``client`` for a 4xx refusal the tool wrote
    itself, ``invalid_arguments``, ``crash`` (an exception in the tool),
    ``server_error`` (a 5xx the tool raised), ``timeout``, ``worker_died`` or
    ``memory``.
    """

    result: ToolResult
    kind: str | None
    message: str

    @property
    def ok(self) -> bool:
        return self.kind is None


_ENV_ERRORS_CLIENT = {"unknown_tool"}


class SandboxedApp:
    """A candidate app loaded in its own sandbox worker, with one instance on its seed database."""

    def __init__(
        self, pool: WorkerPool, instance: RemoteInstance, folder: Path, limits: CheckLimits
    ) -> None:
        self._pool = pool
        self._inst = instance
        self.folder = folder
        self.limits = limits
        self.tools: list[ToolSpec] = list(pool.tools_of(instance.env_path))

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    async def reset(self) -> None:
        """Back to the seed database; recreates the instance if a crash took its worker."""
        try:
            await asyncio.wait_for(self._inst.reset(), self.limits.startup_s)
        except (TimeoutError, WorkerDied, WorkerRequestError, OSError) as exc:
            raise AppLoadError(
                "startup_error", f"the app could not be restarted after a failed call: {exc}"
            ) from None

    async def snapshot(self) -> bytes:
        """The instance's database image (for verifiers)."""
        try:
            image: bytes = await self._inst.snapshot()
        except (WorkerDied, TimeoutError, WorkerRequestError, OSError) as exc:
            raise AppLoadError(
                "startup_error", f"the app's database could not be read: {exc}"
            ) from None
        return image

    async def call(self, tool: str, arguments: dict[str, Any]) -> CallOutcome:
        """Call one tool as an agent would; every failure is classified, none raises."""
        result = await self._inst.call_tool(tool, arguments)
        if not result.is_error:
            return CallOutcome(result, None, "")
        content = result.content if isinstance(result.content, str) else str(result.content)
        etype = result.error_type or "error"
        if etype == "environment_error":
            if "did not finish within" in content:
                return CallOutcome(
                    result,
                    "timeout",
                    f"did not answer within {self.limits.call_s:g} s (an infinite loop or a "
                    "blocking call?); its process was killed",
                )
            if "out of memory" in content:
                return CallOutcome(
                    result,
                    "memory",
                    f"ran out of memory (the {self.limits.memory_bytes / GIB:g} GiB limit); "
                    "do not load whole tables or build unbounded results",
                )
            if "crashed the environment worker" in content:
                return CallOutcome(
                    result,
                    "worker_died",
                    f"killed the app's process: {_exit_detail(self._inst.worker_exitcode)}",
                )
            return CallOutcome(result, "crash", content)
        if etype == "invalid_arguments":
            return CallOutcome(result, "invalid_arguments", content)
        if etype == "tool_error":
            prefix = f"{tool} failed: "
            if content.startswith(prefix):
                return CallOutcome(result, "crash", content.removeprefix(prefix))
            return CallOutcome(result, "server_error", content)
        return CallOutcome(result, "client", f"{etype}: {content}")

    async def close(self) -> None:
        await self._pool.close()


# --------------------------------------------------------------------------- the shared sandbox


def _verifier_line(traceback_text: str | None, source: str) -> str:
    """`` (verifiers.py line N: <code>)`` from a sandbox traceback, or ``""``."""
    if not traceback_text:
        return ""
    found = re.findall(r'File "<verifier [^>]*>", line (\d+)', traceback_text)
    if not found:
        return ""
    n = int(found[-1])
    lines = source.splitlines()
    code = lines[n - 1].strip()[:100] if 0 < n <= len(lines) else ""
    return f" (verifiers.py line {n}: {code})" if code else f" (verifiers.py line {n})"


def verifier_failure(result: VerifierResult, source: str) -> str | None:
    """Why ``result`` is no usable verdict, as the correction loop is told (with the line of
    ``source`` it failed at), or None when it is one."""
    function, err = result.function, result.error
    if err is not None:
        where = _verifier_line(err.traceback, source)
        if err.kind == "exception":
            return f"{function} raised {err.message}{where}"
        return f"{function}: {err.kind}: {err.message}{where}"
    if result.complete is None:
        return f"{function} gave no verdict; return {{'complete': bool, 'evidence': {{...}}}}"
    return None


PROBE_FUNCTION = "_awm_synth_import_probe"


class CheckSandbox:
    """The sandboxes one synthesis run shares: ``slots`` checks at once, one verifier pool.

    Create it inside the run's event loop (``async with CheckSandbox() as sb``).
    """

    def __init__(self, slots: int | None = None, limits: CheckLimits | None = None) -> None:
        self.slots = slots or cpu_slots()
        self.limits = limits or CheckLimits()
        self._sem = asyncio.Semaphore(self.slots)
        self._root = Path(tempfile.mkdtemp(prefix="awm-synth-checks-"))
        self._verifiers = VerifierPool(
            size=self.slots,
            limits=VERIFIER_LIMITS.with_(
                cpu_s=self.limits.verifier_cpu_s,
                wall_s=self.limits.verifier_wall_s,
                memory_bytes=min(self.limits.memory_bytes, 512 * 1024**2),
            ),
        )
        # One-shot checks that import generated code (crash replays, the runtime's validation
        # of a finished bundle): a fresh fork of a warm sandbox template each, staged
        # candidates readable, nothing else of the host.
        self._isolated = JobPool(
            ISOLATED_JOB,
            size=self.slots,
            limits=Limits(memory_bytes=self.limits.memory_bytes, wall_s=self.limits.package_s),
            ro_paths=[self._root],
        )
        self._verify_threads = ThreadPoolExecutor(
            max_workers=self.slots, thread_name_prefix="awm-synth-verify"
        )
        self._closed = False
        self._started = False
        # Started workers waiting for a check: a sandboxed worker takes ~2 s to import FastAPI
        # and SQLAlchemy, so the next one starts while the current check runs.
        self._warm: list[asyncio.Task[WorkerPool]] = []

    async def __aenter__(self) -> CheckSandbox:
        await self._ready()
        return self

    async def _ready(self) -> None:
        """Start the check templates (in parallel, off the event loop) before the first check."""
        if not self._started:
            self._started = True
            await asyncio.get_running_loop().run_in_executor(None, self._isolated.start)

    async def __aexit__(self, *exc: object) -> None:
        warm, self._warm = self._warm, []
        for task in warm:
            task.cancel()
            with contextlib.suppress(BaseException):
                pool = await task
                await pool.close()
        self.close()

    def _start_worker(self) -> None:
        async def start() -> WorkerPool:
            pool = WorkerPool(
                1, call_timeout=self.limits.call_s, memory_limit=self.limits.memory_bytes
            )
            try:
                await pool.start()
            except BaseException:
                await pool.close()
                raise
            return pool

        self._warm.append(asyncio.get_running_loop().create_task(start()))

    async def _fresh_worker(self) -> WorkerPool:
        """A started one-worker pool that has hosted nothing yet; the next starts at once."""
        if not self._warm:
            self._start_worker()
        task = self._warm.pop(0)
        if len(self._warm) < self.slots:
            self._start_worker()
        return await task

    def close(self) -> None:
        """Stop the verifier workers and remove staged candidates."""
        if self._closed:
            return
        self._closed = True
        for task in self._warm:
            task.cancel()
        self._verifiers.close()
        self._isolated.close()
        self._verify_threads.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self._root, ignore_errors=True)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``slots`` for the length of a check."""
        async with self._sem:
            yield

    def stage(self, files: dict[str, str]) -> Path:
        """Write a candidate bundle (manifest, schema, seed, app; tasks and verifiers optional)."""
        return stage_candidate(self._root, files)

    # -- apps ------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def app(self, folder: Path) -> AsyncIterator[SandboxedApp]:
        """Host the candidate in ``folder`` in a fresh worker; raise :class:`AppLoadError` if it won't load.

        A fresh sandboxed worker per check (started ahead, while the previous
        check runs) means no candidate shares a process with another, and a
        worker's memory never grows with the number of apps it has imported.
        """
        await self._ready()
        try:
            pool = await self._fresh_worker()
        except (WorkerDied, TimeoutError, OSError) as exc:
            raise SandboxUnavailableError(
                f"the sandbox worker process did not start: {type(exc).__name__}: {exc}"
            ) from exc
        try:
            try:
                inst = await asyncio.wait_for(pool.create(folder), self.limits.startup_s)
            except TimeoutError:
                raise AppLoadError(
                    "startup_timeout",
                    f"loading app.py did not finish within {self.limits.startup_s:g} s: an "
                    "infinite loop or a blocking call at import time? (it was killed)",
                ) from None
            except WorkerDied as exc:
                raise AppLoadError(
                    "startup_crash",
                    f"the app's process died while loading app.py: {_startup_death(exc)}",
                ) from None
            except WorkerRequestError as exc:
                raise load_error(str(exc), folder, (folder / "app.py").read_text()) from None
            app = SandboxedApp(pool, inst, folder, self.limits)
            yield app
        finally:
            with contextlib.suppress(Exception):  # no teardown for generated code: exit now
                pool.kill()
            await pool.close()

    async def crash_locations(
        self,
        source: str,
        template: bytes,
        sequences: Sequence[Sequence[tuple[str, dict[str, Any]]]],
    ) -> list[str | None]:
        """The crash (with its app.py line) of each sequence's last call, replayed in a child.

        Best effort: a child that fails or hangs just gives no location.
        """
        if not sequences:
            return []
        try:
            found = await run_isolated(
                self._isolated,
                "crash_locations",
                source,
                [[(t, dict(a)) for t, a in seq] for seq in sequences],
                blobs=[template],
                timeout=self.limits.startup_s + self.limits.call_s * sum(map(len, sequences)),
                memory_limit=self.limits.memory_bytes,
            )
        except IsolatedRunError:
            return [None] * len(sequences)
        return list(found)

    # -- verifiers -------------------------------------------------------------------------

    async def verify(
        self,
        source: str,
        function: str,
        initial: bytes,
        final: bytes,
        final_answer: str | None,
    ) -> VerifierResult:
        """Run one verifier in the verifier sandbox; its failures come back in ``error``
        (:func:`verifier_failure` says them as the correction loop is told)."""
        run = self._verifiers.run
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                self._verify_threads,
                lambda: run(
                    source,
                    initial=initial,
                    final=final,
                    function=function,
                    final_answer=final_answer,
                ),
            )
        except (SandboxError, OSError) as exc:
            raise SandboxUnavailableError(f"the verifier sandbox did not start: {exc}") from exc
        return result

    async def verifier_import_error(self, source: str, image: bytes) -> str | None:
        """Why ``source`` fails at module level in the verifier sandbox, or None if it loads."""
        probe = (
            source.rstrip("\n")
            + f"\n\n\ndef {PROBE_FUNCTION}(initial, final, final_answer):\n"
            + "    return {'complete': False}\n"
        )
        error = verifier_failure(
            await self.verify(probe, PROBE_FUNCTION, image, image, None), probe
        )
        if error is None:
            return None
        return error.replace(f"{PROBE_FUNCTION} raised ", "").replace(f"{PROBE_FUNCTION}: ", "")

    # -- packaging -------------------------------------------------------------------------

    async def bundle_problems(self, folder: Path) -> list[str]:
        """The runtime's load-and-validate verdict on a finished bundle, from a child process."""
        # The sandbox sees only the staging root: validate a copy of the bundle made there.
        copy = Path(tempfile.mkdtemp(prefix="package-", dir=self._root)) / folder.name
        shutil.copytree(folder, copy)
        try:
            problems = await run_isolated(
                self._isolated,
                "bundle_problems",
                str(copy),
                timeout=self.limits.package_s,
                memory_limit=self.limits.memory_bytes,
            )
        except IsolatedRunError as exc:
            return [f"the runtime's validation {exc.message}"]
        finally:
            shutil.rmtree(copy.parent, ignore_errors=True)
        problems = [p.replace(str(copy), str(folder)) for p in problems]
        return [p.replace(str(folder), "the bundle") for p in problems]


__all__ = [
    "CallOutcome",
    "CheckLimits",
    "CheckSandbox",
    "IsolatedRunError",
    "SandboxUnavailableError",
    "SandboxedApp",
    "cpu_slots",
    "load_error",
    "run_isolated",
    "stage_candidate",
    "verifier_failure",
]
