"""Requests to sandbox workers over their channels: one in flight per worker, with a deadline.

The host reads each worker's socket with ``loop.add_reader`` and a
:class:`~awm_envs.sandbox.FrameReader`, so a worker that stalls mid-message
never blocks the event loop. A missed deadline stops the worker; a reply
whose caller stopped waiting is kept, and the worker's lock is held until it
answers or misses its deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from awm_envs.pool.host import ImportTimeout, InstanceHost, WorkerDied
from awm_envs.pool.shipping import PackedBundles
from awm_envs.pool.workers import (
    IMPORT_TIMEOUT_ENV,
    WorkerHandle,
    decode_reply,
    encode_request,
    expire,
    kill_group,
    retrieve,
)
from awm_envs.sandbox import wire
from awm_envs.sandbox.exits import describe_exit

_BUNDLE_OPS = ("create", "load", "describe")
_EXIT_WAIT_S = 2.0


class _HandedOff(Exception):
    """Internal: a cancelled request whose worker lock now belongs to a background task."""


class WorkerChannels(InstanceHost):
    """The request/answer machinery of :class:`~awm_envs.pool.remote.WorkerPool`.

    A subclass provides ``_warm`` (a spare that just started), besides what
    :class:`~awm_envs.pool.host.InstanceHost` asks for.
    """

    import_timeout: float
    _tasks: set[asyncio.Task[Any]]
    _bundles: PackedBundles

    async def _warm(self, w: WorkerHandle) -> None:
        raise NotImplementedError

    # -- the channel -------------------------------------------------------------------
    def _on_readable(self, w: WorkerHandle) -> None:
        try:
            data = w.proc.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._channel_lost(w)
            return
        try:
            messages = w.reader.feed(data)
        except wire.ProtocolError as exc:
            self._channel_lost(w, f"sent a malformed message ({exc}) and was stopped")
            return
        for message in messages:
            if not w.ready.done():
                if not message[0].get("ready"):
                    self._channel_lost(
                        w, "sent something before its start-up message and was stopped"
                    )
                    return
                if w.start_timer is not None:
                    w.start_timer.cancel()
                w.start_s = time.monotonic() - w.spawned
                w.ready.set_result(None)
                if w.index < 0:
                    self._task(self._warm(w))
                continue
            fut, w.inflight = w.inflight, None
            if fut is None:
                self._channel_lost(w, "sent a message nobody asked for and was stopped")
                return
            if fut.done():  # its caller was cancelled, or its deadline passed this loop turn
                w.orphan = message
            else:
                fut.set_result(message)

    def _detach(self, w: WorkerHandle) -> bool:
        """Stop listening to a worker; False if that was already done."""
        if not w.alive:
            return False
        w.alive = False
        with contextlib.suppress(Exception):
            asyncio.get_running_loop().remove_reader(w.proc.fileno())
        if w.start_timer is not None:
            w.start_timer.cancel()
        return True

    def _channel_lost(self, w: WorkerHandle, problem: str | None = None) -> None:
        """The worker closed its channel (it died) or broke the protocol (``problem``)."""
        if not self._detach(w):
            return
        if problem is not None:
            w.stopped = problem
            kill_group(w.proc)
        self._bury(w)
        if not w.ready.done():
            w.ready.set_exception(WorkerDied(f"sandbox worker {w.index} did not start"))
            return
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerDied(f"sandbox worker {w.index} died"))
            return
        if fut is not None:  # a request whose caller had just stopped waiting for it
            op, who = w.current
            self._on_failure(
                w,
                who,
                f"another instance's {op} request crashed the shared environment worker",
                culprit_text=f"your previous {op} request (its caller had stopped waiting) "
                "crashed the environment worker",
            )
            return
        self._on_failure(w, None, "the environment worker hosting this instance died between calls")

    def _stop(self, w: WorkerHandle, why: str) -> None:
        """Kill a worker now (a missed deadline, the pool closing)."""
        if not self._detach(w):
            return
        w.stopped = why
        kill_group(w.proc)
        self._bury(w)
        if not w.ready.done():
            w.ready.set_exception(WorkerDied(f"sandbox worker {w.index} {why}"))
        fut, w.inflight = w.inflight, None
        if fut is not None and not fut.done():
            fut.set_exception(WorkerDied(f"sandbox worker {w.index} {why}"))

    def _bury(self, w: WorkerHandle) -> None:
        if w.exit_task is None:
            w.exit_task = self._task(self._reap(w))

    async def _reap(self, w: WorkerHandle) -> str:
        """Wait for the exit status (killing it if it lingers); how it ended, in words."""
        proc = w.proc.proc
        deadline = time.monotonic() + _EXIT_WAIT_S
        while proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        lingered = proc.poll() is None
        if lingered:
            kill_group(w.proc)
            for _ in range(500):
                if proc.poll() is not None:
                    break
                await asyncio.sleep(0.01)
        with contextlib.suppress(OSError):
            w.proc.sock.close()
        if w.root is not None:
            shutil.rmtree(w.root, ignore_errors=True)
        if w.stopped is not None:
            return w.stopped
        if lingered:
            return "closed its channel to the host and was stopped"
        return describe_exit(proc.returncode)

    async def _death_reason(self, w: WorkerHandle) -> str:
        self._bury(w)
        assert w.exit_task is not None
        return await asyncio.shield(w.exit_task)

    def _task(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(retrieve)
        return task

    # -- requests ----------------------------------------------------------------------
    async def _request(
        self,
        w: WorkerHandle,
        op: str,
        args: tuple[Any, ...],
        timeout: float,
        *,
        who: str | None = None,
    ) -> Any:
        """One request/answer with a deadline; a missed deadline stops the worker.

        ``who`` is the instance the request is for (blamed if it kills the
        worker after its caller stopped waiting).
        """
        await w.lock.acquire()
        handed_off = False
        try:
            if not w.alive:
                raise WorkerDied(f"sandbox worker {w.index} is gone")
            path = None
            if op in _BUNDLE_OPS:
                path = str(args[0])
                bundle = self._bundles.get(path)
                if bundle.key not in w.shipped:
                    await self._exchange(
                        w,
                        encode_request("ship", (bundle.key, path, bundle.names, bundle.data)),
                        self.setup_timeout,
                        op,
                        who,
                    )
                    w.shipped.add(bundle.key)
                args = (bundle.key, *args[1:])
                if bundle.key not in w.loaded:
                    timeout = self.import_timeout
            try:
                value = await self._exchange(w, encode_request(op, args), timeout, op, who)
            except TimeoutError:
                if path is not None and args[0] not in w.loaded:
                    raise ImportTimeout(
                        f"{Path(path) / 'app.py'} did not finish importing within "
                        f"{timeout:g} s (the import limit, {IMPORT_TIMEOUT_ENV}; an infinite loop "
                        "or a blocking call at import time?); the worker importing it was stopped"
                    ) from None
                raise
            if path is not None:
                w.loaded.add(args[0])
            return value
        except _HandedOff:
            handed_off = True
            raise asyncio.CancelledError() from None
        finally:
            if not handed_off:
                w.lock.release()

    async def _exchange(
        self, w: WorkerHandle, message: wire.Message, timeout: float, op: str, who: str | None
    ) -> Any:
        """Send one message and wait for its answer (the worker's lock is held).

        The hot path awaits the reply future directly under a timer (no ``wait_for``
        or ``shield``: a tool call costs the host a few tens of microseconds). A
        reply that arrives after its caller was cancelled, or in the same loop
        turn as its deadline, is kept in ``w.orphan``.
        """
        loop = asyncio.get_running_loop()
        data = wire.encode(*message)
        fut: asyncio.Future[wire.Message] = loop.create_future()
        w.inflight = fut
        w.orphan = None
        w.current = (op, who)
        deadline = loop.time() + timeout
        try:
            sent = w.proc.sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            w.inflight = None
            self._channel_lost(w)  # it was already gone: not this request's doing
            raise WorkerDied(f"sandbox worker {w.index} is gone") from None
        timer = loop.call_later(timeout, expire, fut)
        try:
            if sent < len(data):  # the rest in a task of its own: never half a message
                sending = asyncio.ensure_future(
                    loop.sock_sendall(w.proc.sock, memoryview(data)[sent:])
                )
                try:
                    await asyncio.wait_for(asyncio.shield(sending), timeout)
                except TimeoutError:
                    self._stop(w, f"stopped reading its requests for {timeout:g} s and was stopped")
                    raise WorkerDied(f"sandbox worker {w.index} stopped reading") from None
                except OSError:
                    pass  # it died: the channel's end says so through ``fut``
            reply = await fut
        except asyncio.CancelledError:
            # The caller stopped waiting. If the worker still owes the answer, it keeps
            # running the request: hold its lock until it answers or misses the deadline.
            orphan, w.orphan = w.orphan, None
            if orphan is not None or (fut.done() and not fut.cancelled()) or not w.alive:
                raise
            if fut.cancelled():
                fut = loop.create_future()
                w.inflight = fut
            self._task(self._abandoned(w, fut, deadline, op, who))
            raise _HandedOff() from None
        except TimeoutError:
            orphan, w.orphan = w.orphan, None
            if orphan is not None:  # it answered in the very loop turn of its deadline
                return decode_reply(orphan)
            w.inflight = None
            self._stop(w, f"did not answer {op} within {timeout:g} s and was stopped")
            raise TimeoutError(op) from None
        finally:
            timer.cancel()
        return decode_reply(reply)

    async def _abandoned(
        self,
        w: WorkerHandle,
        fut: asyncio.Future[wire.Message],
        deadline: float,
        op: str,
        who: str | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(fut, max(0.0, deadline - loop.time()))
        except TimeoutError:
            w.inflight = None
            self._stop(w, f"did not answer {op} in time and was stopped")
            what = f"did not finish within its {self._limit_for(op):g} s limit"
            self._on_failure(
                w,
                who,
                f"another instance's {op} request {what}, so the shared environment worker was stopped",
                culprit_text=f"your previous {op} request {what} (its caller had stopped waiting), "
                "so the environment worker was stopped",
                with_reason=False,
            )
        except WorkerDied:
            self._on_failure(
                w,
                who,
                f"another instance's {op} request crashed the shared environment worker",
                culprit_text=f"your previous {op} request (its caller had stopped waiting) crashed "
                "the environment worker",
            )
        except Exception:
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                w.lock.release()

    def _limit_for(self, op: str) -> float:
        return self.call_timeout if op == "call" else self.setup_timeout
