"""A thread-safe pool of fork-per-job templates: N jobs at a time, each in a fresh fork."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Sequence
from typing import Any

from awm_envs.sandbox import wire
from awm_envs.sandbox.forkserver import ForkServer
from awm_envs.sandbox.isolation import resolve
from awm_envs.sandbox.limits import Limits


class JobPool:
    """``size`` :class:`ForkServer` templates of one job; ``run`` blocks, ``arun`` awaits.

    Templates start on first use (or all at once with :meth:`start`); a job
    waits for a free template, so ``size`` bounds how many run at once.
    """

    def __init__(
        self,
        job: str,
        *,
        size: int = 2,
        limits: Limits | None = None,
        preload: Sequence[str] = (),
        ro_paths: Sequence[str | os.PathLike[str]] = (),
        require_isolation: bool | None = None,
        debug: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a JobPool needs at least one template process")
        self.size = size
        self.limits = limits or Limits()
        self.isolation = resolve(require_isolation)
        self._servers = [
            ForkServer(
                job,
                limits=self.limits,
                preload=preload,
                ro_paths=ro_paths,
                isolation=self.isolation,
                debug=debug,
                name=f"awm-jobs-{i}",
            )
            for i in range(size)
        ]
        self._idle: queue.SimpleQueue[ForkServer] = queue.SimpleQueue()
        for server in self._servers:
            self._idle.put(server)
        self._lock = threading.Lock()
        self.closed = False

    def start(self) -> JobPool:
        """Start every template now (keeps start-up out of timings)."""
        servers = [self._idle.get() for _ in range(self.size)]
        try:
            threads = [threading.Thread(target=s.start) for s in servers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            for s in servers:
                self._idle.put(s)
        return self

    def run(
        self, header: dict[str, Any], blobs: Sequence[bytes] = (), limits: Limits | None = None
    ) -> wire.Message:
        if self.closed:
            raise RuntimeError("this JobPool is closed; create a new one")
        server = self._idle.get()
        try:
            return server.run(header, blobs, limits)
        finally:
            self._idle.put(server)

    async def arun(
        self, header: dict[str, Any], blobs: Sequence[bytes] = (), limits: Limits | None = None
    ) -> wire.Message:
        return await asyncio.to_thread(self.run, header, blobs, limits)

    @property
    def restarts(self) -> int:
        return sum(s.restarts for s in self._servers)

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        for s in self._servers:
            with contextlib.suppress(Exception):
                s.close()

    def __enter__(self) -> JobPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
