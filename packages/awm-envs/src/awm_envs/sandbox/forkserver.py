"""The host's side of a fork-per-job template (:mod:`awm_envs.sandbox.forkhost`)."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.isolation import Isolation, resolve
from awm_envs.sandbox.limits import Limits
from awm_envs.sandbox.process import SandboxProcess

START_TIMEOUT_S = 120.0


class SandboxStartError(RuntimeError):
    """The sandbox itself would not start: the machine's fault, not the code's."""


def error_reply(kind: str, message: str) -> dict[str, Any]:
    return {"status": "error", "kind": kind, "message": message, "traceback": None}


class ForkServer:
    """Runs ``job`` ("module:function") once per :meth:`run`, each time in a fresh fork.

    Not thread-safe: one job at a time (pools hold several). The template
    starts on first use and is replaced if it ever dies or stalls.
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
        self.own_namespace = False

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
        )
        try:
            ready = self.proc.recv(START_TIMEOUT_S)
        except (wire.ChannelClosed, wire.ProtocolError):
            ready = None
        if ready is None or not ready[0].get("ready"):
            reason = self.proc.exit_reason(wait=0.5)
            self.proc.kill()
            self.proc = None
            raise SandboxStartError(
                f"the sandbox template for {self.job} did not start (it {reason}); "
                "run with debug=True to see its stderr"
            )
        self.own_namespace = bool(ready[0].get("namespace"))
        return self

    def run(
        self, header: dict[str, Any], blobs: Sequence[bytes] = (), limits: Limits | None = None
    ) -> wire.Message:
        """One job in a fresh fork: its reply, or an error reply if it (or the template) failed."""
        lim = limits or self.limits
        if self.proc is None or not self.proc.alive():
            if self.proc is not None:
                self.restarts += 1
            self.start()
        assert self.proc is not None
        self.jobs += 1
        try:
            self.proc.send({**header, "~limits": lim.to_json()}, blobs)
            reply = self.proc.recv(lim.wall_s + 10.0)  # the template enforces wall_s itself
        except (wire.ChannelClosed, wire.ProtocolError, TimeoutError, OSError) as exc:
            reason = self.proc.exit_reason(wait=1.0)
            self._discard()
            return error_reply("crash", f"the sandbox template {reason} ({exc})"), []
        if reply is None:
            self._discard()
            return error_reply(
                "timeout", "the sandbox template stopped answering and was killed"
            ), []
        return reply

    def _discard(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.close(grace=0.2)
            self.proc = None

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()


def wait_until(predicate: Any, timeout: float) -> bool:  # small helper for tests and pools
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())
