"""One sandboxed Python process and the channel to it.

Every piece of generated code awm runs (tool code in environment workers,
verifiers, the synthesis pipeline's checks) runs in a :class:`SandboxProcess`:
a fresh interpreter started through bubblewrap where the machine allows it
(see :mod:`awm_envs.sandbox.isolation`), with a scrubbed environment, its own
session, rlimits set before any generated code is imported, and a socket that
carries JSON headers and raw blobs (:mod:`awm_envs.sandbox.wire`) - never
pickles, so nothing the sandbox writes can execute in the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.cgroups import PidsCgroup
from awm_envs.sandbox.exits import describe_exit
from awm_envs.sandbox.isolation import Isolation, bwrap_argv, resolve
from awm_envs.sandbox.limits import Limits

BOOT = Path(__file__).with_name("boot.py")
CHANNEL_FD = 3
# Processes a sandbox needs beyond what its code may start: bubblewrap itself, the
# interpreter, and a template's warm spares.
_PROCESS_OVERHEAD = 8

# What sandboxed code may see of the host's environment: nothing secret.
_KEPT_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")


_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``Popen`` from one long-lived thread.

    bubblewrap's ``--die-with-parent`` (and ``PR_SET_PDEATHSIG``) fire when the
    *thread* that started the process ends, not the process: a sandbox started
    from a short-lived worker thread (``asyncio.to_thread``, an executor) would
    be killed the moment that thread finished.
    """
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="awm-sandbox-spawner")
        spawner = _spawner

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, **kwargs)

    return spawner.submit(start).result()


def sandbox_env(home: str = "/tmp") -> dict[str, str]:
    env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
    env.setdefault("LC_ALL", "C.UTF-8")
    env.update({"PATH": os.defpath, "HOME": home, "PYTHONHASHSEED": "0", "TMPDIR": "/tmp"})
    return env


class SandboxProcess:
    """A sandboxed interpreter running ``entry`` ("module:function") with a channel to it.

    ``ro_paths`` are granted read-only (a bundle folder, a job's database
    copies), ``rw_paths`` read-write; everything else of the host's file system
    is invisible under bubblewrap. ``preload`` modules are imported before the
    memory limit is measured, so ``limits.memory_bytes`` is headroom for the
    code itself. The private ``/tmp`` is capped at ``tmp_bytes`` (default: the
    memory limit), so files written there are bounded like memory is.
    """

    def __init__(
        self,
        entry: str,
        *,
        limits: Limits | None = None,
        preload: Sequence[str] = (),
        config: dict[str, Any] | None = None,
        ro_paths: Sequence[str | os.PathLike[str]] = (),
        rw_paths: Sequence[str | os.PathLike[str]] = (),
        isolation: Isolation | None = None,
        require_isolation: bool | None = None,
        debug: bool = False,
        name: str = "awm-sandbox",
        tmp_bytes: int | None = None,
    ) -> None:
        self.entry = entry
        self.limits = limits or Limits()
        self.isolation = isolation or resolve(require_isolation)
        self.name = name
        host, child = socket.socketpair()
        self.sock = host
        self.started = time.monotonic()
        home = "/tmp"
        env = sandbox_env(home)
        boot_config = {
            **(config or {}),
            "entry": entry,
            "preload": list(preload),
            "fd": child.fileno(),
            "limits": self.limits.to_json(),
            "sys_path": [p for p in sys.path if p],
            "env": env,
            "nproc": os.getuid() != 0,
            "isolated": self.isolation.isolated,
            "host_pid": os.getpid(),
        }
        argv = [sys.executable, "-I", "-B", str(BOOT), json.dumps(boot_config)]
        if self.isolation.isolated:
            assert self.isolation.bwrap is not None
            argv = [
                *bwrap_argv(
                    self.isolation.bwrap,
                    ro_paths=ro_paths,
                    rw_paths=rw_paths,
                    env=env,
                    tmp_bytes=self.limits.memory_bytes if tmp_bytes is None else tmp_bytes,
                ),
                *argv,
            ]
        # the process-count bound that holds for root as well (RLIMIT_NPROC does not)
        self.cgroup = PidsCgroup.create(self.limits.processes + _PROCESS_OVERHEAD)
        try:
            self.proc = _spawn(
                argv,
                preexec_fn=self.cgroup.join if self.cgroup is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=None if debug else subprocess.DEVNULL,
                stderr=None if debug else subprocess.DEVNULL,
                env=env,
                pass_fds=(child.fileno(),),
                start_new_session=True,  # its signals never reach the host's process group
                close_fds=True,
            )
        finally:
            child.close()
        self.sock.setblocking(False)
        self.returncode: int | None = None

    # -- channel ---------------------------------------------------------------------------
    def fileno(self) -> int:
        return self.sock.fileno()

    def send(
        self, header: dict[str, Any], blobs: Sequence[bytes] = (), timeout: float = 30.0
    ) -> None:
        wire.write_message(self.sock.fileno(), header, blobs, timeout)

    def recv(self, timeout: float | None) -> wire.Message | None:
        """The next message, None on timeout; raises ChannelClosed/ProtocolError."""
        return wire.read_message(self.sock.fileno(), timeout)

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill the process and everything it started (its whole PID namespace under bwrap)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.returncode = self.proc.returncode
        if self.cgroup is not None and self.returncode is not None:
            self.cgroup.remove()
        with contextlib.suppress(OSError):
            self.sock.close()

    def close(self, grace: float = 0.5) -> None:
        """Ask it to stop (close the channel), then kill whatever is left."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace)
        self.kill()

    def exit_reason(self, wait: float = 2.0) -> str:
        """Why it is gone (waits briefly for the exit status)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=wait)
        return describe_exit(self.proc.returncode)

    def __repr__(self) -> str:
        return f"SandboxProcess({self.entry!r}, pid={self.pid}, {self.isolation.kind})"
