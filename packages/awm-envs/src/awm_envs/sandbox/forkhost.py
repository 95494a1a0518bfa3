"""A pre-imported template process that forks a fresh child for every job.

Why fork per job: a job (a verifier, a synthesis check) is untrusted code, and
anything it changes in its interpreter - a rebound builtin, a patched
``json.dumps``, a module-level cache - must not reach the next job. A child
forked from a clean template starts with everything imported (so a job costs
about a millisecond, not an interpreter start) and takes all its changes with
it when it exits. After each job the template kills whatever the job left
running (under bubblewrap: every other process in its private PID namespace)
and empties the private ``/tmp``.

Runs inside a :class:`~awm_envs.sandbox.process.SandboxProcess`; the host side
is :class:`awm_envs.sandbox.forkserver.ForkServer`. The job is
``module:function`` taking ``(header, blobs)`` and returning a header dict or a
``(header, blobs)`` pair; a module-level ``sandbox_prepare()`` runs once in
the template (warm-ups, audit hooks).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import math
import os
import resource
import select
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.boot import limit_memory
from awm_envs.sandbox.exits import describe_exit

Job = Callable[[dict[str, Any], list[bytes]], Any]
SPARES = 2  # warm children kept ready; each holds only the pages its warm-up touched


def _error(kind: str, message: str, tb: str | None = None) -> dict[str, Any]:
    return {"status": "error", "kind": kind, "message": message, "traceback": tb}


def _prctl_function() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None


_PRCTL = _prctl_function() if sys.platform.startswith("linux") else None


def _not_dumpable() -> None:
    if _PRCTL is not None:
        _PRCTL(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0


def _serve_one(job: Job, warmup: Callable[[], Any] | None, jobs_in: int, out: int) -> None:
    """The life of one forked child: warm up, wait for one job, run it, reply, exit."""
    os.setpgid(0, 0)
    _not_dumpable()  # a job running beside this spare cannot ptrace it or write its memory
    if warmup is not None:
        with contextlib.suppress(Exception):
            warmup()  # trusted code: faults in the pages a job touches, before the job waits
    try:
        msg = wire.read_message(jobs_in)
    except (wire.ChannelClosed, wire.ProtocolError):
        os._exit(0)
    if msg is None:
        os._exit(0)
    header, blobs = msg
    limits = header.pop("~limits", {})
    cpu = max(1, math.ceil(float(limits.get("cpu_s", 5.0))))
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(used.ru_utime + used.ru_stime)
    resource.setrlimit(resource.RLIMIT_CPU, (spent + cpu + 1, spent + cpu + 2))  # behind job timers
    limit_memory(int(limits.get("memory_bytes", 0)))
    try:
        result = job(header, blobs)
        reply, out_blobs = result if isinstance(result, tuple) else (result, [])
        data = wire.encode(reply, out_blobs)
    except MemoryError:
        data = wire.encode(_error("memory", "the code exceeded its memory limit"))
    except BaseException as exc:  # noqa: BLE001 - whatever the job does becomes a reply
        data = wire.encode(
            _error("crash", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-4000:])
        )
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(out, view) :]
    except OSError:
        pass
    os._exit(0)


@dataclass
class _Spare:
    pid: int
    jobs_out: int  # the template writes the job here
    replies_in: int  # and reads the child's reply here


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def _grow_pipe(fd: int) -> None:
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (ImportError, OSError):
        pass


class ForkHost:
    """The template's side: keep one warm child ready, hand it a job, clean up after it.

    The next job's child is forked and warmed up right after the previous job
    is answered, so the fork and the page faults of a fresh process are off
    the host's critical path, and every job still gets a process of its own.
    """

    def __init__(
        self, job: Job, warmup: Callable[[], Any] | None, isolated: bool, channel: int | None
    ) -> None:
        self.job = job
        self.warmup = warmup
        self.channel = channel
        # bubblewrap runs its own init as PID 1 and this process as PID 2 of a private
        # namespace: then every other PID is something a job left behind.
        self.own_namespace = isolated and os.getpid() <= 2
        self.spares: list[_Spare] = []
        self.spare: _Spare | None = None  # the one running the current job

    def fill(self) -> None:
        """Keep SPARES warm children ready: a job arriving right after another need not wait."""
        while len(self.spares) < SPARES:
            self.fork_spare()

    def fork_spare(self) -> None:
        jobs_in, jobs_out = os.pipe()
        replies_in, replies_out = os.pipe()
        _grow_pipe(jobs_out)
        pid = os.fork()
        if pid == 0:  # the next job's child
            os.close(jobs_out)
            os.close(replies_in)
            if self.channel is not None:
                os.close(self.channel)
            _serve_one(self.job, self.warmup, jobs_in, replies_out)
        os.close(jobs_in)
        os.close(replies_out)
        self.spares.append(_Spare(pid, jobs_out, replies_in))

    def run(
        self, header: dict[str, Any], blobs: list[bytes], limits: dict[str, Any], retry: bool = True
    ) -> wire.Message:
        """One job in the spare child (forking one if there is none); the reply, always."""
        if not self.spares or not retry:
            self.fork_spare()
        spare = self.spare = self.spares.pop(0 if retry else -1)
        wall = float(limits.get("wall_s", 10.0))
        cap = int(limits.get("max_output_bytes", 1 << 26))
        message: wire.Message | None = None
        problem = ""
        try:
            wire.write_message(spare.jobs_out, {**header, "~limits": limits}, blobs, timeout=wall)
        except (wire.ChannelClosed, TimeoutError, OSError) as exc:
            if retry:  # a spare killed by an earlier job's leftovers: use a freshly forked one
                self._discard(spare)
                return self.run(header, blobs, limits, retry=False)
            problem = f"it could not be handed the job ({exc})"
        else:
            message, problem = self._collect(spare.replies_in, wall, cap)
        if message is not None:
            return message
        self._kill_job(spare.pid)
        status = self._reap(spare.pid)
        if problem == "timeout":
            return _error(
                "timeout",
                f"the code ran longer than its {wall:g} s wall-clock limit and was killed",
            ), []
        if problem == "oversized":
            return _error("bad_output", f"the code's reply is over the {cap}-byte limit"), []
        code = os.waitstatus_to_exitcode(status) if status is not None else None
        if code == -signal.SIGXCPU:
            return _error(
                "timeout", f"the code exceeded its {limits.get('cpu_s')} s CPU time limit"
            ), []
        detail = f": {problem}" if problem else ""
        return _error("crash", f"the process running the code {describe_exit(code)}{detail}"), []

    def finish(self) -> None:
        """After the reply went out: end the job's process, clean up, fork the next one."""
        spare, self.spare = self.spare, None
        if spare is not None:
            self._discard(spare, wait=False)
            self._clean_up(spare.pid)
        self._reap_zombies()
        if self.channel is None:
            return
        if not self.spares or not _readable(self.channel):
            self.fill()  # a job already waiting takes a ready spare first; refill after it

    def _discard(self, spare: _Spare, wait: bool = True) -> None:
        self._kill_job(spare.pid)
        if wait:
            self._reap(spare.pid)
        for fd in (spare.jobs_out, spare.replies_in):
            with contextlib.suppress(OSError):
                os.close(fd)

    @staticmethod
    def _reap_zombies() -> None:
        """Collect exited children (jobs, and orphans re-parented here) without waiting."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    @staticmethod
    def _reap(pid: int) -> int | None:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None

    @staticmethod
    def _collect(fd: int, wall_s: float, cap: int) -> tuple[wire.Message | None, str]:
        """The child's one message, as soon as it is complete; else why there is none."""
        deadline = time.monotonic() + wall_s
        reader = wire.FrameReader(max_frame=cap + 4096)
        total = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, "timeout"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None, "timeout"
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None, ""
            total += len(chunk)
            if total > cap + 4096:
                return None, "oversized"
            try:
                messages = reader.feed(chunk)
            except wire.ProtocolError as exc:
                return None, str(exc)
            if messages:
                return messages[0], ""

    @staticmethod
    def _kill_job(pid: int) -> None:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill()

    def _clean_up(self, pid: int) -> None:
        """Nothing a job started may outlive it, and nothing it wrote may reach the next one."""
        if not self.own_namespace:
            # without a PID namespace, a child that left the job's group escapes: rlimits only
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            return
        keep = {1, os.getpid(), *(s.pid for s in self.spares)}
        for _ in range(3):
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]
            if not others:
                break
            for other in others:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(other, signal.SIGKILL)
            for other in others:  # they are our orphans only if bwrap's init reaped them
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(other, os.WNOHANG)
        for entry in os.listdir("/tmp"):
            path = os.path.join("/tmp", entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def run_in_fork(
    job: Job,
    header: dict[str, Any],
    blobs: list[bytes] | None = None,
    limits: dict[str, Any] | None = None,
) -> wire.Message:
    """One job in a fork of *this* process, with the same limits and clean-up as a template's.

    For code already inside a sandbox (a synthesis check that validates a
    bundle): its verifiers still get a process each, without a sandbox nested
    in a sandbox.
    """
    host = ForkHost(job, None, isolated=False, channel=None)
    try:
        return host.run(header, blobs or [], limits or {})
    finally:
        host.finish()


def _resolve(spec: str) -> tuple[Job, Any]:
    module_name, _, function = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, function), module


def main(fd: int, config: dict[str, Any]) -> None:
    """Entry point (see :mod:`awm_envs.sandbox.boot`): serve jobs until the channel closes."""
    os.set_blocking(fd, True)
    job, module = _resolve(config["job"])
    prepare = getattr(module, "sandbox_prepare", None)
    if callable(prepare):
        prepare()
    warmup = getattr(module, "sandbox_warmup", None)
    host = ForkHost(job, warmup if callable(warmup) else None, bool(config.get("isolated")), fd)
    gc.collect()
    gc.freeze()  # the template's objects are never collected: forks do not touch their pages
    host.fill()
    wire.write_message(fd, {"ready": True, "pid": os.getpid(), "namespace": host.own_namespace})
    while True:
        if not host.spares:
            host.fill()
        try:
            msg = wire.read_message(fd)
        except (wire.ChannelClosed, wire.ProtocolError):
            return
        if msg is None:
            return
        header, blobs = msg
        limits = header.pop("~limits", {})
        reply, out = host.run(header, blobs, limits)
        try:
            wire.write_message(fd, reply, out)
        except wire.ChannelClosed:
            return
        finally:
            host.finish()  # off the critical path: the host already has its answer
