"""A pre-imported template process that forks a fresh child for every job.

Why fork per job: a job (a verifier, a synthesis check) is untrusted code, and
anything it changes in its interpreter - a rebound builtin, a patched
``json.dumps``, a module-level cache - must not reach the next job. A child
forked from a clean template starts with everything imported (so a job costs
about a millisecond, not an interpreter start) and takes all its changes with
it when it exits.

How a job travels (the template never touches job data, so the page faults a
fork causes in it stay off the job's path):

1. the template forks a *spare* child, which warms up (runs the job module's
   ``sandbox_warmup`` and the wire code once, so the pages a job touches are
   already its own) and waits; the template hands the host the two pipe ends
   that reach it (``SCM_RIGHTS``) and keeps none;
2. the host writes one job into the spare's pipe and reads one reply from the
   other, with its own wall clock; a spare serves exactly one job;
3. the host says ``done``; the template kills the job's process and
   everything it left running (under bubblewrap, every other process in its
   private PID namespace), empties the private ``/tmp``, answers ``clean``
   (with the exit status) and forks the next spare. The host starts no job
   before the previous one is ``clean``.

Runs inside a :class:`~awm_envs.sandbox.process.SandboxProcess`; the host side
is :class:`awm_envs.sandbox.forkserver.ForkServer`. The job is
``module:function`` taking ``(header, blobs)`` and returning a header dict or a
``(header, blobs)`` pair; a module-level ``sandbox_prepare()`` runs once in
the template (warm-ups, audit hooks).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import math
import os
import resource
import shutil
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any

from awm_envs.sandbox import seccomp, wire
from awm_envs.sandbox.boot import address_space_in_use, limit_memory
from awm_envs.sandbox.exits import describe_exit

Job = Callable[[dict[str, Any], list[bytes]], Any]
# The first byte a spare writes on its reply pipe, as soon as it has the whole job: proof,
# before the job's clock starts, that the spare was alive and runnable (not killed or
# stopped from outside), so a damaged spare is never blamed on the job it was handed.
ACK = b"\x06"
# Warm children ready beyond the one running a job: a job arriving right after another finds
# one whose warm-up (a few milliseconds of page faults) is already done.
SPARES = 2


def error(kind: str, message: str, tb: str | None = None) -> dict[str, Any]:
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


def _grow_pipe(fd: int) -> None:
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)


def _warm_path(warmup: Callable[[], Any] | None) -> None:
    """Run the code a job's path runs, once, before the job: each page it writes in a fresh
    fork costs a fault (several microseconds in a VM), and these are now paid in advance."""
    if warmup is not None:
        with contextlib.suppress(Exception):
            warmup()
    r, w = os.pipe()
    try:
        os.write(w, wire.encode({"status": "ok", "warm": [1, "x", None]}, [b"warm"]))
        wire.read_message(r, 1.0)
    finally:
        os.close(r)
        os.close(w)
    resource.getrusage(resource.RUSAGE_SELF)
    resource.setrlimit(resource.RLIMIT_CPU, resource.getrlimit(resource.RLIMIT_CPU))
    address_space_in_use()
    with contextlib.suppress(Exception):
        traceback.format_exc()
        error("crash", "warm")


def serve_one(job: Job, warmup: Callable[[], Any] | None, jobs_in: int, out: int) -> None:
    """The life of one forked child: warm up, wait for one job, run it, reply, exit."""
    os.setpgid(0, 0)
    _not_dumpable()  # a job running beside this spare cannot ptrace it or write its memory
    # and cannot signal it: a job may signal its own process only (not a spare, the
    # template or bubblewrap's init), whatever uid the sandbox runs as
    seccomp.confine_signals(os.getpid())
    _warm_path(warmup)
    try:
        msg = wire.read_message(jobs_in)
    except (wire.ChannelClosed, wire.ProtocolError):
        os._exit(0)
    if msg is None:
        os._exit(0)
    os.close(jobs_in)
    try:
        os.write(out, ACK)
    except OSError:
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
        data = wire.encode(error("memory", "the code exceeded its memory limit"))
    except BaseException as exc:  # noqa: BLE001 - whatever the job does becomes a reply
        data = wire.encode(
            error("crash", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-4000:])
        )
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(out, view) :]
    os._exit(0)


def fork_spare(
    job: Job, warmup: Callable[[], Any] | None, close_in_child: tuple[int, ...] = ()
) -> tuple[int, int, int]:
    """Fork one spare; returns ``(pid, jobs_w, replies_r)``: the ends the host uses."""
    jobs_r, jobs_w = os.pipe()
    replies_r, replies_w = os.pipe()
    _grow_pipe(jobs_w)
    _grow_pipe(replies_w)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(jobs_w)
            os.close(replies_r)
            for fd in close_in_child:
                os.close(fd)
            serve_one(job, warmup, jobs_r, replies_w)
        finally:
            os._exit(0)
    os.close(jobs_r)
    os.close(replies_w)
    return pid, jobs_w, replies_r


def kill_job(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def reap(pid: int) -> int | None:
    """The job's exit code (``-N`` for a signal), or None if it was not our child."""
    try:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        return None


def reap_zombies() -> None:
    """Collect exited children (orphans re-parented here) without waiting."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def clean_namespace(keep: set[int]) -> None:
    """Kill every process in this PID namespace but ``keep``; empty the private /tmp and /dev/shm.

    Only for a template that is PID 1 of its own namespace (bubblewrap's ``--as-pid-1``).
    """
    keep = keep | {1, os.getpid()}
    for _ in range(3):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]
        if not others:
            break
        for other in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(other, signal.SIGKILL)
        reap_zombies()
    _empty_tmp("/tmp", _mounted_under_tmp())
    _empty_tmp("/dev/shm", frozenset())


@functools.cache
def _mounted_under_tmp() -> frozenset[str]:
    """Mount points inside /tmp (a venv or bundle granted from the host's /tmp) and the
    folders leading to them: clean-up removes everything around them, never walks into them."""
    keep: set[str] = set()
    with contextlib.suppress(OSError), open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")  # mountinfo escapes spaces
            if point.startswith("/tmp/"):
                while point not in ("/tmp", "/"):
                    keep.add(point)
                    point = os.path.dirname(point)
    return frozenset(keep)


def _empty_tmp(folder: str, keep: frozenset[str]) -> None:
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(folder, entry)
        if path in keep:
            if not os.path.ismount(path):
                _empty_tmp(path, keep)
        elif os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def classify(code: int | None, limits: dict[str, Any], problem: str = "") -> dict[str, Any]:
    """The error reply for a job that gave no reply, from how its process ended."""
    if code is not None and -code == signal.SIGXCPU:
        return error("timeout", f"the code exceeded its {limits.get('cpu_s')} s CPU time limit")
    detail = f": {problem}" if problem else ""
    return error("crash", f"the process running the code {describe_exit(code)}{detail}")


def await_ack(fd: int, timeout: float) -> bool:
    """Whether the spare on ``fd`` took its job (wrote :data:`ACK`) within ``timeout``."""
    import select

    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return False
    try:
        return os.read(fd, 1) == ACK
    except OSError:
        return False


def read_reply(fd: int, wall_s: float, cap: int) -> tuple[wire.Message | None, str]:
    """One message from a job's reply pipe within ``wall_s``; else why there is none."""
    try:
        message = wire.read_message(fd, wall_s, max_frame=cap)
    except wire.ChannelClosed:
        return None, ""
    except wire.ProtocolError as exc:
        return None, f"its reply was not a message ({exc})"
    if message is None:
        return None, "timeout"
    return message, ""


def run_in_fork(
    job: Job,
    header: dict[str, Any],
    blobs: list[bytes] | None = None,
    limits: dict[str, Any] | None = None,
) -> wire.Message:
    """One job in a fork of *this* process, with the limits and clean-up of a template's.

    For code already inside a sandbox (a synthesis check that validates a
    bundle): its verifiers still get a process each, without a sandbox nested
    in a sandbox.
    """
    lim = limits or {}
    wall = float(lim.get("wall_s", 10.0))
    pid, jobs_w, replies_r = fork_spare(job, None)
    try:
        try:
            wire.write_message(jobs_w, {**header, "~limits": lim}, blobs or [], timeout=wall)
        except (wire.ChannelClosed, TimeoutError, OSError) as exc:
            message, problem = None, f"it could not be handed the job ({exc})"
        else:
            if await_ack(replies_r, wall):
                message, problem = read_reply(
                    replies_r, wall, int(lim.get("max_output_bytes", 1 << 26))
                )
            else:
                message, problem = None, "it did not take the job"
    finally:
        os.close(jobs_w)
        os.close(replies_r)
        kill_job(pid)
    code = reap(pid)
    if message is not None:
        return message
    if problem == "timeout":
        return error(
            "timeout", f"the code ran longer than its {wall:g} s wall-clock limit and was killed"
        ), []
    return classify(code, lim, problem), []


class Template:
    """The template's side of the protocol with its host (control messages only)."""

    def __init__(self, job: Job, warmup: Callable[[], Any] | None, isolated: bool, fd: int) -> None:
        self.job = job
        self.warmup = warmup
        self.sock = socket.socket(fileno=fd)
        self.sock.setblocking(True)
        # bubblewrap runs this process as PID 1 of a private namespace (``--as-pid-1``):
        # then every PID but the spares' is something a job left behind.
        self.own_namespace = isolated and os.getpid() <= 2
        self.spares: dict[int, int] = {}  # spare id -> pid
        self.ids = 0
        self.reader = wire.FrameReader(max_frame=1 << 20)

    def send(self, header: dict[str, Any], fds: list[int] | None = None) -> None:
        data = wire.encode(header)
        if fds:
            socket.send_fds(self.sock, [data], fds)
        else:
            self.sock.sendall(data)

    def add_spare(self) -> None:
        pid, jobs_w, replies_r = fork_spare(self.job, self.warmup, (self.sock.fileno(),))
        self.ids += 1
        self.spares[self.ids] = pid
        try:
            self.send({"spare": self.ids, "pid": pid}, [jobs_w, replies_r])
        finally:
            os.close(jobs_w)  # the host has them now; the template keeps no way into a job
            os.close(replies_r)

    def done(self, spare: int) -> None:
        pid = self.spares.pop(spare, None)
        code: int | None = None
        if pid is not None:
            kill_job(pid)
            code = reap(pid)
            if self.own_namespace:
                clean_namespace(set(self.spares.values()))
            else:
                # without a PID namespace, a child that left the job's group escapes it
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
        reap_zombies()
        self.send({"clean": spare, "code": code})

    def fill(self) -> None:
        while len(self.spares) < SPARES + 1:  # + the one a job may be running in
            self.add_spare()

    def serve(self) -> None:
        self.fill()
        self.send({"ready": True, "pid": os.getpid(), "namespace": self.own_namespace})
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            try:
                messages = self.reader.feed(data)
            except wire.ProtocolError:
                return
            for header, _ in messages:
                if "done" in header:
                    self.done(int(header["done"]))
                self.fill()


def _resolve(spec: str) -> tuple[Job, Any]:
    module_name, _, function = spec.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, function), module


def main(fd: int, config: dict[str, Any]) -> None:
    """Entry point (see :mod:`awm_envs.sandbox.boot`): serve the host until it goes away."""
    _not_dumpable()  # no job (same uid, no capabilities) may read or write this one's memory
    seccomp.prepare_signal_filter()  # compiled once here, loaded by each spare
    job, module = _resolve(config["job"])
    prepare = getattr(module, "sandbox_prepare", None)
    if callable(prepare):
        prepare()
    warmup = getattr(module, "sandbox_warmup", None)
    template = Template(job, warmup if callable(warmup) else None, bool(config.get("isolated")), fd)
    gc.collect()
    gc.freeze()  # the template's objects are never collected: forks do not touch their pages
    template.serve()


__all__ = ["SPARES", "Template", "error", "main", "run_in_fork", "serve_one"]
