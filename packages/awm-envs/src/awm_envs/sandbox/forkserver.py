"""The host's side of a fork-per-job template (:mod:`awm_envs.sandbox.forkhost`).

The host talks to the template over the sandbox channel with control messages
only (``spare`` announcements carrying two pipe ends, ``done``/``clean``), and
to each job directly through the pipes of the spare that runs it: one job in,
one reply out, read with the host's own wall clock. A job can therefore never
write into another job's reply, and nothing a job writes is unpickled or
executed here (:mod:`awm_envs.sandbox.wire`).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.exits import describe_exit
from awm_envs.sandbox.forkhost import await_ack, classify, error, read_reply
from awm_envs.sandbox.isolation import Isolation, resolve
from awm_envs.sandbox.limits import Limits
from awm_envs.sandbox.process import SandboxProcess

START_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 30.0


class SandboxStartError(RuntimeError):
    """The sandbox itself would not start: the machine's fault, not the code's."""


error_reply = error  # the reply a job gets when it (or its template) failed


@dataclass
class _Spare:
    id: int
    pid: int
    jobs_w: int
    replies_r: int

    def close(self) -> None:
        for fd in (self.jobs_w, self.replies_r):
            with contextlib.suppress(OSError):
                os.close(fd)


class _TemplateGone(Exception):
    pass


def _proc_field(pid: int, field: str) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def find_in_namespace(root: int, inner_pid: int) -> int | None:
    """The host pid of the descendant of ``root`` whose pid in its own namespace is ``inner_pid``."""
    todo, seen = [root], 0
    while todo and seen < 4096:
        pid = todo.pop()
        seen += 1
        nspid = _proc_field(pid, "NSpid").split()
        if pid != root and nspid and int(nspid[-1]) == inner_pid:
            return pid
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                continue
    return None


class ForkServer:
    """Runs ``job`` ("module:function") once per :meth:`run`, each time in a fresh fork.

    Not thread-safe: one job at a time (:class:`~awm_envs.sandbox.jobpool.JobPool`
    holds several). The template starts on first use and is replaced if it
    ever dies or stops answering.
    """

    def __init__(
        self,
        job: str,
        *,
        limits: Limits | None = None,
        preload: Sequence[str] = (),
        ro_paths: Sequence[str | os.PathLike[str]] = (),
        isolation: Isolation | None = None,
        require_isolation: bool | None = None,
        debug: bool = False,
        name: str = "awm-forkserver",
    ) -> None:
        self.job = job
        self.limits = limits or Limits()
        self.preload = list(preload)
        self.ro_paths = list(ro_paths)
        self.isolation = isolation or resolve(require_isolation)
        self.debug = debug
        self.name = name
        self.proc: SandboxProcess | None = None
        self.jobs = 0
        self.restarts = 0
        self.damaged = 0  # spares found dead or stopped when handed a job (then retried)
        self.own_namespace = False
        self._reader = wire.FrameReader(max_frame=1 << 20)
        self._fds: deque[int] = deque()
        self._spares: deque[_Spare] = deque()
        self._unclean: int | None = None  # a finished job whose clean-up is not confirmed yet
        self._codes: dict[int, int | None] = {}
        self._ready: dict[str, Any] | None = None  # the template's "ready" message

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ForkServer:
        if self.proc is not None and self.proc.alive():
            return self
        # The template itself gets generous memory: each job sets its own limit after the fork.
        template_limits = self.limits.with_(memory_bytes=max(self.limits.memory_bytes, 1 << 30))
        self.proc = SandboxProcess(
            "awm_envs.sandbox.forkhost:main",
            limits=template_limits,
            preload=self.preload,
            config={"job": self.job},
            ro_paths=self.ro_paths,
            isolation=self.isolation,
            debug=self.debug,
            name=self.name,
            tmp_bytes=self.limits.memory_bytes,  # what one job may write, like what it may map
        )
        self._reader = wire.FrameReader(max_frame=1 << 20)
        self._fds.clear()
        self._spares.clear()
        self._unclean = None
        self._ready = None
        try:
            self._until(lambda: self._ready is not None, START_TIMEOUT_S)
        except _TemplateGone as exc:
            reason = self.proc.exit_reason(wait=0.5)
            self._discard()
            raise SandboxStartError(
                f"the sandbox template for {self.job} did not start (it {reason}; {exc}); "
                "run with debug=True to see its stderr"
            ) from None
        assert self._ready is not None
        self.own_namespace = bool(self._ready.get("namespace"))
        return self

    def close(self) -> None:
        self._drop_spares()
        if self.proc is not None:
            self.proc.close(grace=0.2)
            self.proc = None

    def _discard(self) -> None:
        self._drop_spares()
        if self.proc is not None:
            self.proc.kill()
            self.proc = None

    def _drop_spares(self) -> None:
        while self._spares:
            self._spares.popleft().close()
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.popleft())

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()

    # -- control channel -------------------------------------------------------------------
    def _pump(self, timeout: float) -> bool:
        """Read what the template sent (with any pipe ends attached); False on timeout."""
        assert self.proc is not None
        sock = self.proc.sock
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:
            return False
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 16)
        except BlockingIOError:
            return True
        except OSError as exc:
            raise _TemplateGone(str(exc)) from None
        self._fds.extend(fds)
        if not data:
            raise _TemplateGone("it closed the channel")
        try:
            messages = self._reader.feed(data)
        except wire.ProtocolError as exc:
            raise _TemplateGone(f"it sent garbage: {exc}") from None
        for header, _ in messages:
            if "spare" in header:
                if len(self._fds) < 2:
                    raise _TemplateGone("a spare announced without its pipes")
                self._spares.append(
                    _Spare(
                        int(header["spare"]),
                        int(header["pid"]),
                        self._fds.popleft(),
                        self._fds.popleft(),
                    )
                )
            elif "clean" in header:
                self._codes[int(header["clean"])] = header.get("code")
            elif "ready" in header:
                self._ready = header
        return True

    def _until(self, done: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise _TemplateGone(f"no answer within {timeout:g} s")
            self._pump(left)

    def _send_done(self, spare: _Spare) -> None:
        assert self.proc is not None
        try:
            self.proc.send({"done": spare.id}, timeout=CONTROL_TIMEOUT_S)
        except (wire.ChannelClosed, TimeoutError, OSError) as exc:
            raise _TemplateGone(str(exc)) from None

    # -- spares ----------------------------------------------------------------------------
    def _await_ack(self, spare: _Spare, timeout: float) -> bool:
        """Whether ``spare`` took its job; a spare found stopped or dead is given up at once."""
        if await_ack(spare.replies_r, min(timeout, 0.05)):
            return True
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._spare_state(spare) in ("stopped", "gone"):
                return False
            if await_ack(spare.replies_r, min(0.25, max(0.0, deadline - time.monotonic()))):
                return True
        return False

    def _spare_state(self, spare: _Spare) -> str:
        """The spare's state as the host's /proc shows it: running, stopped or gone."""
        if self.proc is None:
            return "gone"
        found = find_in_namespace(self.proc.pid, spare.pid)
        if found is None:
            return "gone" if self.own_namespace else "running"
        state = _proc_field(found, "State")[:1]
        if state in ("T", "t"):
            return "stopped"
        return "gone" if state in ("Z", "X", "") else "running"

    # -- jobs ------------------------------------------------------------------------------
    def run(
        self, header: dict[str, Any], blobs: Sequence[bytes] = (), limits: Limits | None = None
    ) -> wire.Message:
        """One job in a fresh fork: its reply, or an error reply if it (or the template) failed."""
        lim = limits or self.limits
        try:
            return self._run(header, blobs, lim)
        except _TemplateGone as exc:
            reason = self.proc.exit_reason(wait=1.0) if self.proc is not None else "is gone"
            self._discard()
            return error_reply("crash", f"the sandbox template {reason} ({exc})"), []

    def _run(self, header: dict[str, Any], blobs: Sequence[bytes], lim: Limits) -> wire.Message:
        if self.proc is None or not self.proc.alive():
            if self.proc is not None:
                self.restarts += 1
                self._discard()
            self.start()
        # nothing the previous job left behind may be alive when this one starts
        unclean = self._unclean
        if unclean is not None:
            self._until(lambda: unclean in self._codes, CONTROL_TIMEOUT_S)
            self._codes.pop(unclean, None)
            self._unclean = None
        limits = lim.to_json()
        self.jobs += 1
        for attempt in (1, 2):
            self._until(lambda: bool(self._spares), CONTROL_TIMEOUT_S)
            spare = self._spares.popleft()
            taken = False
            try:
                try:
                    wire.write_message(
                        spare.jobs_w, {**header, "~limits": limits}, blobs, lim.wall_s
                    )
                except (wire.ChannelClosed, TimeoutError, OSError) as exc:
                    message, problem = None, f"it could not be handed the job ({exc})"
                else:
                    taken = self._await_ack(spare, lim.wall_s)
                    if taken:
                        message, problem = read_reply(
                            spare.replies_r, lim.wall_s, lim.max_output_bytes + 65536
                        )
                    else:
                        message, problem = None, "it did not take the job"
            finally:
                spare.close()
            self._send_done(spare)
            if message is not None:
                self._unclean = spare.id  # confirmed before the next job, off this one's path
                return message
            sid = spare.id
            self._until(lambda sid=sid: sid in self._codes, CONTROL_TIMEOUT_S)
            code = self._codes.pop(sid, None)
            if not taken:
                # the spare was dead or stopped before the job ran: damage from outside, never
                # the job's doing; the template replaces it and the job runs once more
                self.damaged += 1
                if attempt == 1:
                    continue
                return error_reply(
                    "crash",
                    "the sandbox could not run the job: two warm spare processes in a row were "
                    f"killed or stopped from outside before it started (last: {problem}"
                    + (f"; it {describe_exit(code)})" if code is not None else ")"),
                ), []
            if problem == "timeout":
                return error_reply(
                    "timeout",
                    f"the code ran longer than its {lim.wall_s:g} s wall-clock limit and was killed",
                ), []
            return classify(code, limits, problem), []
        raise AssertionError("unreachable")
