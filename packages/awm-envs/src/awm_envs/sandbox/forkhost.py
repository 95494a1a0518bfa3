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

import importlib
import math
import os
import resource
import select
import shutil
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.boot import limit_memory
from awm_envs.sandbox.process import describe_exit

Job = Callable[[dict[str, Any], list[bytes]], Any]


def _error(kind: str, message: str, tb: str | None = None) -> dict[str, Any]:
    return {"status": "error", "kind": kind, "message": message, "traceback": tb}


def _child(job: Job, header: dict[str, Any], blobs: list[bytes], limits: dict[str, Any], out: int) -> None:
    os.setpgid(0, 0)
    cpu = max(1, math.ceil(float(limits.get("cpu_s", 5.0))))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu + 1, cpu + 2))  # behind any finer job timer
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


class ForkHost:
    """The template's side: fork, wait with a deadline, clean up, reply."""

    def __init__(self, job: Job, isolated: bool) -> None:
        self.job = job
        # bubblewrap runs its own init as PID 1 and this process as PID 2 of a private
        # namespace: then every other PID is something a job left behind.
        self.own_namespace = isolated and os.getpid() <= 2

    def run(self, header: dict[str, Any], blobs: list[bytes], limits: dict[str, Any], channel: int) -> wire.Message:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the job's child
            os.close(r)
            os.close(channel)
            _child(self.job, header, blobs, limits, w)
        os.close(w)
        try:
            data, timed_out, oversized = self._collect(r, float(limits.get("wall_s", 10.0)), int(limits.get("max_output_bytes", 1 << 26)))
        finally:
            os.close(r)
        if timed_out or oversized:
            self._kill_job(pid)
        _, status = os.waitpid(pid, 0)
        self._clean_up(pid)
        if timed_out:
            return _error("timeout", f"the code ran longer than its {limits.get('wall_s')} s wall-clock limit and was killed"), []
        if oversized:
            return _error("bad_output", f"the code's reply is over the {limits.get('max_output_bytes')}-byte limit"), []
        try:
            messages = wire.FrameReader().feed(data)
        except wire.ProtocolError as exc:
            messages = []
            problem = str(exc)
        else:
            problem = ""
        if len(messages) == 1:
            return messages[0]
        code = os.waitstatus_to_exitcode(status)
        if code == -signal.SIGXCPU:
            return _error("timeout", f"the code exceeded its {limits.get('cpu_s')} s CPU time limit"), []
        return _error("crash", f"the process running the code {describe_exit(code)}{': ' + problem if problem else ''}"), []

    @staticmethod
    def _collect(fd: int, wall_s: float, cap: int) -> tuple[bytes, bool, bool]:
        deadline = time.monotonic() + wall_s
        buf = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(buf), True, False
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return bytes(buf), True, False
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return bytes(buf), False, False
            buf += chunk
            if len(buf) > cap + 4096:
                return bytes(buf), False, True

    @staticmethod
    def _kill_job(pid: int) -> None:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass

    def _clean_up(self, pid: int) -> None:
        """Nothing a job started may outlive it, and nothing it wrote may reach the next one."""
        if not self.own_namespace:
            try:
                os.killpg(pid, signal.SIGKILL)  # a child that left the group escapes: rlimits only
            except (ProcessLookupError, PermissionError):
                pass
            return
        me = os.getpid()
        for _ in range(3):
            others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
            if not others:
                break
            for other in others:
                try:
                    os.kill(other, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for other in others:  # they are our orphans only if bwrap's init reaped them
                try:
                    os.waitpid(other, os.WNOHANG)
                except ChildProcessError:
                    pass
        for entry in os.listdir("/tmp"):
            path = os.path.join("/tmp", entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass


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
    host = ForkHost(job, bool(config.get("isolated")))
    wire.write_message(fd, {"ready": True, "pid": os.getpid(), "namespace": host.own_namespace})
    while True:
        try:
            msg = wire.read_message(fd)
        except (wire.ChannelClosed, wire.ProtocolError):
            return
        if msg is None:
            return
        header, blobs = msg
        limits = header.pop("~limits", {})
        reply, out = host.run(header, blobs, limits, fd)
        try:
            wire.write_message(fd, reply, out)
        except wire.ChannelClosed:
            return
