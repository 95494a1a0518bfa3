"""Environment workers forked from one pre-imported sandboxed template.

Why: a sandbox worker that starts as a fresh interpreter imports FastAPI, SQLAlchemy and
pydantic itself, about 110 MiB of private memory and a second of CPU before it hosts
anything. A node serving a hundred distinct generated environments (one AWM-1K RL step)
would hold a hundred such interpreters. Forked from a template that imported them once
(and froze its objects out of the garbage collector, so the children do not copy those
pages by touching them), each worker shares the libraries' pages and pays only for its
own environment, and is ready in milliseconds.

The template is a :class:`~awm_envs.sandbox.SandboxProcess` (under bubblewrap: no
network, no host files but the interpreter, a private PID namespace and ``/tmp``). It
forks workers on request and hands the host each worker's end of a socket pair
(``SCM_RIGHTS``); the worker then runs :func:`awm_envs.pool.worker_main.serve` on it, the
same protocol as a worker started on its own. Each worker is made as unreachable from
its siblings as from outside: its own process group (killing it kills what it started),
not dumpable (a sibling cannot ptrace it or read its memory), a seccomp filter that lets
it signal only itself, its own memory and file limits, and death with the template.
Above all, each worker enters a Landlock domain of its own
(:mod:`awm_envs.sandbox.landlock_domain`) before it reads anything sent to it: it reads
the interpreter's folders, reads and writes its own folder (its shipped bundles and its
``TMPDIR``), and nothing else, so no sibling's bundle, ``/tmp`` file or ``/dev/shm`` is
reachable; the kernel refuses its signals, ``ptrace`` and ``/proc/PID/mem`` access to any
process outside its domain (siblings, the template, bubblewrap). The template itself is
not dumpable from its first line and imports only trusted code (the shipped catalog).
Where the kernel cannot scope signals, :func:`template_refusal` says why and pools fall
back to a fresh sandbox per worker.

The host side (:class:`WorkerTemplate`, :class:`ForkedWorker`) looks like a
:class:`~awm_envs.sandbox.SandboxProcess` to the pool, which needs no other change.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import socket
import threading
import time
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.exits import describe_exit
from awm_envs.sandbox.isolation import Isolation
from awm_envs.sandbox.limits import GIB, Limits
from awm_envs.sandbox.process import SandboxProcess

TEMPLATE_ENTRY = "awm_envs.pool.worker_template:serve"
TEMPLATE_PROCESSES = 8192  # every worker and thread of the template's sandbox together
TEMPLATE_TMP_BYTES = 4 * GIB  # the shipped bundles of every forked worker


# --------------------------------------------------------------------------- in the sandbox


def _send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """One :mod:`~awm_envs.sandbox.wire` message, with descriptors (``SCM_RIGHTS``) if any."""
    data = wire.encode(message)
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def _recv(sock: socket.socket, timeout: float | None = None) -> tuple[dict[str, Any], list[int]]:
    """One :mod:`~awm_envs.sandbox.wire` message and the descriptors that came with it.

    Requests and replies alternate on this channel, so a read never holds more than one.
    """
    sock.settimeout(timeout)
    reader = wire.FrameReader()
    received: list[int] = []
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        received += fds
        if not data:
            raise EOFError("the channel closed")
        messages = reader.feed(data)
        if messages:
            return messages[0][0], received


def _not_dumpable() -> None:
    """``PR_SET_DUMPABLE`` 0: no process of the same uid may ptrace this one or open its
    ``/proc/PID/mem`` (inherited by every fork)."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_DUMPABLE failed")


def _become_worker(
    sock: socket.socket, root: str, request: dict[str, Any], read_paths: list[str]
) -> None:
    """The forked child: confine itself, then serve the worker protocol until its channel closes."""
    import resource
    import tempfile

    from awm_envs.pool import worker_main
    from awm_envs.sandbox import landlock_domain, seccomp
    from awm_envs.sandbox.boot import limit_memory

    os.setpgid(0, 0)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the template
    _not_dumpable()  # already so (the template is), kept explicit: it must hold
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # its own files only, signals and ptrace only within its own domain; raises rather
    # than serve unconfined
    landlock_domain.enter(read=read_paths, write=[root])
    os.environ["TMPDIR"] = root
    tempfile.tempdir = root
    os.chdir(root)
    seccomp.confine_signals(os.getpid())
    files = int(request.get("open_files") or 1024)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    limit_memory(int(request.get("memory_bytes") or 0))
    worker_main.serve(sock.fileno(), {"root": root})


WARM_ENV = "shop"
WARM_TOOL = "list_my_orders"


def _warm() -> None:
    """Load, call and unload one shipped catalog environment (trusted code) before forking.

    Why: much of what an app's import costs a fresh worker is the libraries finishing
    their own set-up on first use (SQLAlchemy's SQLite dialect and compilers, pydantic's
    validators, FastAPI's routing and dependency machinery). Done here once, those pages
    are shared by every worker instead of written again in each.
    """
    with contextlib.suppress(Exception):
        from awm_envs.bundle.loader import load_bundle, unload_bundle
        from awm_envs.bundle.sources import CATALOG_DIR
        from awm_envs.runtime.environment import Environment

        bundle = load_bundle(CATALOG_DIR / WARM_ENV)
        env = Environment(bundle)
        instance = env.instance()
        instance.call_tool_sync(WARM_TOOL, {})
        instance.close_sync()
        env.engine.dispose()
        bundle.app.dependency_overrides.clear()
        unload_bundle(bundle)


def _worker_read_paths(isolated: bool) -> list[str]:
    """What a forked worker may read: what the template's sandbox mounts from the host
    (under bubblewrap), or the interpreter's own folders (without it)."""
    import sys
    import sysconfig

    from awm_envs.sandbox import landlock_domain

    if isolated:
        return landlock_domain.mounted_read_paths()
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/proc"}
    paths.update(p for p in sysconfig.get_paths().values() if p)
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    paths.update(("/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime"))
    return sorted(p for p in paths if os.path.exists(p))


def _become_subreaper() -> None:
    """Orphans of any worker become this template's children (also without bubblewrap)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _kill_strays(workers: set[int]) -> None:
    """Kill every child of this template that is not a worker: what a tool left running
    (a daemon, a double fork) was re-parented here when its parent exited. A worker
    started on its own takes such processes with its PID namespace when it ends; forked
    workers share the template's, so the template ends them itself."""
    me = os.getpid()
    try:
        tids = os.listdir(f"/proc/{me}/task")
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"/proc/{me}/task/{tid}/children") as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            if kid not in workers:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(kid, signal.SIGKILL)


def serve(fd: int, config: dict[str, Any]) -> None:
    """The template's life: fork workers on request, report and end them, until the host goes."""
    _not_dumpable()  # before anything else: no worker may read or write this process
    channel = socket.socket(fileno=fd)
    channel.setblocking(True)
    import shutil
    import tempfile

    from awm_envs.sandbox import seccomp

    read_paths = _worker_read_paths(bool(config.get("isolated")))
    seccomp.prepare_signal_filter()  # compiled once here, loaded by each worker
    _warm()
    gc.collect()
    gc.freeze()  # the children share these pages: the collector must not write to them
    codes: dict[int, int] = {}
    children: set[int] = set()
    roots: dict[int, str] = {}

    def reap(block_for: int | None = None, wait_s: float = 0.0) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                if block_for is None or block_for not in children or time.monotonic() > deadline:
                    return
                time.sleep(0.002)
                continue
            children.discard(pid)
            codes[pid] = os.waitstatus_to_exitcode(status)
            shutil.rmtree(roots.pop(pid, ""), ignore_errors=True) if pid in roots else None
            if len(codes) > 4096:  # nobody asked: forget the oldest
                codes.pop(next(iter(codes)))

    _become_subreaper()
    _send(channel, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            request, fds = _recv(channel)
        except (EOFError, OSError, ValueError):  # wire's errors are EOFError/ValueError
            break
        for stray in fds:
            os.close(stray)
        op = request.get("op")
        reap()
        _kill_strays(children)
        if op == "fork":
            # its own folder for shipped bundles (in the host's /tmp without bubblewrap)
            root = tempfile.mkdtemp(prefix="awm-worker-")
            host_end, child_end = socket.socketpair()
            pid = os.fork()
            if pid == 0:
                try:
                    channel.close()
                    host_end.close()
                    _become_worker(child_end, root, request, read_paths)
                finally:
                    os._exit(0)
            child_end.close()
            children.add(pid)
            roots[pid] = root
            try:
                _send(channel, {"pid": pid}, [host_end.fileno()])
            finally:
                host_end.close()
        elif op == "status":
            pid = int(request.get("pid", 0))
            _send(channel, {"code": codes.get(pid), "running": pid in children})
        elif op == "kill":
            pid = int(request.get("pid", 0))
            if pid in children:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                reap(block_for=pid, wait_s=2.0)
                _kill_strays(children)  # what it left running is re-parented here now
            _send(channel, {"code": codes.get(pid), "running": pid in children})
        else:
            _send(channel, {"error": f"unknown template op {op!r}"})
    for pid in list(children):  # the host is gone: so are its workers
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        shutil.rmtree(roots.pop(pid, ""), ignore_errors=True)


# --------------------------------------------------------------------------- in the host


class TemplateUnavailable(RuntimeError):
    """The worker template would not start or stopped answering: the machine's fault."""


class WorkerTemplate:
    """The host's end of one worker template; thread-safe; starts on first :meth:`fork`."""

    def __init__(self, isolation: Isolation, *, debug: bool = False) -> None:
        self.isolation = isolation
        self.debug = debug
        self.proc: SandboxProcess | None = None
        self._lock = threading.Lock()
        self.forks = 0
        self.starts = 0

    def _start(self) -> SandboxProcess:
        from awm_envs.pool.workers import PRELOAD

        proc = SandboxProcess(
            TEMPLATE_ENTRY,
            limits=Limits(memory_bytes=0, open_files=4096, processes=TEMPLATE_PROCESSES),
            preload=PRELOAD,
            isolation=self.isolation,
            debug=self.debug,
            name="awm-worker-template",
            tmp_bytes=TEMPLATE_TMP_BYTES,
        )
        try:
            ready, _ = _recv(proc.sock, 120.0)
        except (EOFError, OSError, ValueError) as exc:
            proc.kill()
            raise TemplateUnavailable(
                f"the sandboxed worker template did not start: it {proc.exit_reason(0.5)} ({exc})"
            ) from None
        if not ready.get("ready"):
            proc.kill()
            raise TemplateUnavailable("the sandboxed worker template sent no ready message")
        self.starts += 1
        return proc

    def start(self) -> WorkerTemplate:
        """Start the template now (a second or so: it imports the libraries); a no-op if running."""
        with self._lock:
            if self.proc is None or not self.proc.alive():
                if self.proc is not None:
                    self.proc.kill()
                self.proc = self._start()
        return self

    def _ask(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """One request and its reply; starts (or restarts) the template for a ``fork``."""
        with self._lock:
            for attempt in (1, 2):
                if self.proc is None or not self.proc.alive():
                    if message.get("op") != "fork":
                        return {"code": None, "running": False, "gone": True}, []
                    if self.proc is not None:
                        self.proc.kill()
                    self.proc = self._start()
                try:
                    self.proc.sock.setblocking(True)
                    _send(self.proc.sock, message)
                    return _recv(self.proc.sock, 30.0)
                except (EOFError, OSError, ValueError) as exc:
                    self.proc.kill()
                    self.proc = None
                    if attempt == 2 or message.get("op") != "fork":
                        raise TemplateUnavailable(
                            f"the sandboxed worker template stopped answering ({exc})"
                        ) from None
            raise AssertionError("unreachable")

    def fork(self, memory_limit: int | None, open_files: int = 1024) -> ForkedWorker:
        """A new worker, forked from the template, its ``ready`` message still to read."""
        reply, fds = self._ask(
            {"op": "fork", "memory_bytes": memory_limit or 0, "open_files": open_files}
        )
        if len(fds) != 1 or "pid" not in reply:
            for fd in fds:
                os.close(fd)
            raise TemplateUnavailable(f"the worker template did not fork a worker: {reply}")
        self.forks += 1
        assert self.proc is not None
        return ForkedWorker(self, int(reply["pid"]), socket.socket(fileno=fds[0]))

    def status(self, inner_pid: int) -> tuple[bool, int | None]:
        """Whether the worker still runs, and its exit code once the template reaped it."""
        reply, _ = self._ask({"op": "status", "pid": inner_pid})
        return bool(reply.get("running")), reply.get("code")

    def kill(self, inner_pid: int) -> int | None:
        reply, _ = self._ask({"op": "kill", "pid": inner_pid})
        return reply.get("code")

    def close(self) -> None:
        with self._lock:
            if self.proc is not None:
                self.proc.close()
                self.proc = None


class _Status:
    """The ``Popen``-like face of a forked worker (``poll``, ``returncode``, ``kill``)."""

    def __init__(self, worker: ForkedWorker) -> None:
        self._worker = worker
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                running, code = self._worker.template.status(self._worker.inner_pid)
            except TemplateUnavailable:
                running, code = False, -int(signal.SIGKILL)
            if not running:
                self.returncode = code if code is not None else -int(signal.SIGKILL)
        return self.returncode

    def kill(self) -> None:
        self._worker.kill()

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = time.monotonic() + (timeout if timeout is not None else 3600.0)
        while self.poll() is None:
            if time.monotonic() > deadline:
                import subprocess

                raise subprocess.TimeoutExpired("awm-forked-worker", timeout or 0.0)
            time.sleep(0.005)
        return self.returncode


class ForkedWorker:
    """A worker forked from a :class:`WorkerTemplate`, with the face of a ``SandboxProcess``.

    Exit codes are ``Popen``'s (negative for a signal), never bubblewrap's ``128 + N``.
    """

    forked = True

    def __init__(self, template: WorkerTemplate, inner_pid: int, sock: socket.socket) -> None:
        from awm_envs.sandbox.forkserver import find_in_namespace

        self.template = template
        self.isolation = template.isolation
        self.inner_pid = inner_pid
        self.sock = sock
        self.sock.setblocking(False)
        self.started = time.monotonic()
        self.proc = _Status(self)
        host_pid: int | None = inner_pid
        if template.isolation.isolated and template.proc is not None:
            host_pid = find_in_namespace(template.proc.pid, inner_pid)
        self._host_pid = host_pid

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, header: dict[str, Any], blobs: Any = (), timeout: float = 30.0) -> None:
        from awm_envs.sandbox import wire

        wire.write_message(self.sock.fileno(), header, blobs, timeout)

    def recv(self, timeout: float | None) -> Any:
        from awm_envs.sandbox import wire

        return wire.read_message(self.sock.fileno(), timeout)

    @property
    def pid(self) -> int:
        """Its pid as this host sees it (its process group, for ``killpg``)."""
        return self._host_pid or -1

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """Kill it and everything it started (its process group), through the template."""
        if self.proc.returncode is None:
            try:
                code = self.template.kill(self.inner_pid)
            except TemplateUnavailable:
                code = None
            self.proc.returncode = code if code is not None else -int(signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.sock.close()

    def close(self, grace: float = 0.5) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + grace
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.kill()

    def exit_reason(self, wait: float = 2.0) -> str:
        with contextlib.suppress(Exception):
            self.proc.wait(wait)
        return describe_exit(self.proc.returncode)

    def __repr__(self) -> str:
        return f"ForkedWorker(pid={self.pid}, inner={self.inner_pid})"


TEMPLATE_ENV = "AWM_WORKER_TEMPLATE"


def template_default() -> bool:
    """Whether sandbox worker pools fork their workers from a template (``AWM_WORKER_TEMPLATE``)."""
    return os.environ.get(TEMPLATE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def template_refusal() -> str | None:
    """None where workers may be forked from a template here; otherwise why not.

    Forked workers share their template's sandbox, so they are kept apart by a Landlock
    domain each; a kernel that cannot scope signals and files per process cannot keep
    one environment from reaching the next, and pools then start each worker in a
    sandbox of its own (slower to start, as separate).
    """
    from awm_envs.sandbox import landlock_domain

    problem = landlock_domain.unavailable()
    return None if problem is None else f"workers are not forked from a template: {problem}"


_warned_refusal = False


def warn_refused(reason: str) -> None:
    """Say once per process that ``template=True`` was refused, and why."""
    global _warned_refusal
    if not _warned_refusal:
        _warned_refusal = True
        import sys

        print(
            f"WARNING: awm sandbox: {reason}; each worker gets a sandbox of its own",
            file=sys.stderr,
        )


_shared: WorkerTemplate | None = None
_shared_lock = threading.Lock()


def shared_template(isolation: Isolation, *, debug: bool = False) -> WorkerTemplate:
    """This process's worker template for ``isolation`` (one per process; closed at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared.isolation != isolation or _shared.debug != debug:
            import atexit

            _shared = WorkerTemplate(isolation, debug=debug)
            atexit.register(_shared.close)
        return _shared


__all__ = [
    "ForkedWorker",
    "TemplateUnavailable",
    "WorkerTemplate",
    "serve",
    "shared_template",
    "template_default",
    "template_refusal",
]
