"""The code that runs inside a sandbox worker process (or a Ray actor).

A worker hosts many instances of any number of environments. It answers one
small request at a time over a pipe: ``(op, args)`` in, ``(ok, value)`` out,
both plain tuples/dicts so pickling stays cheap. It never raises to its
caller: every failure becomes an error value. What it cannot survive (a hang,
a segfault, the memory limit) is the parent's business: the parent kills and
replaces the worker (see :mod:`awm_envs.workers`).
"""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from awm_core.models import ToolResult
from awm_envs.bundle import load_bundle
from awm_envs.environment import Environment
from awm_envs.errors import BundleError
from awm_envs.instance import Instance

ResultTuple = tuple[Any, bool, str | None, float]


def result_tuple(result: ToolResult) -> ResultTuple:
    """The wire form of a ToolResult (a tuple pickles ~5x faster than a model)."""
    return (result.content, result.is_error, result.error_type, result.latency_s)


def result_from_tuple(t: ResultTuple) -> ToolResult:
    content, is_error, error_type, latency = t
    return ToolResult(content=content, is_error=is_error, error_type=error_type, latency_s=latency)


class WorkerState:
    """Environments and instances living in one worker; ``handle`` is the whole protocol."""

    def __init__(self) -> None:
        self.envs: dict[str, Environment] = {}
        self.instances: dict[str, Instance] = {}

    def _env(self, path: str) -> Environment:
        env = self.envs.get(path)
        if env is None:
            env = Environment(load_bundle(Path(path)))
            self.envs[path] = env
        return env

    def handle(self, op: str, args: tuple[Any, ...]) -> Any:
        """Run one request; raise only for protocol errors (reported as ``(False, msg)``)."""
        if op == "call":
            iid, name, arguments = args
            inst = self.instances.get(iid)
            if inst is None:
                return (
                    f"instance {iid} does not exist in this worker",
                    True,
                    "environment_error",
                    0.0,
                )
            return result_tuple(inst.call_tool_sync(name, arguments))
        if op == "create":
            path, iid = args
            env = self._env(path)
            self.instances[iid] = env.instance(iid)
            return [t.model_dump() for t in env.tools]
        if op == "reset":
            self.instances[args[0]].reset()
            return None
        if op == "snapshot":
            return self.instances[args[0]].snapshot()
        if op == "restore":
            self.instances[args[0]].restore(args[1])
            return None
        if op == "close":
            inst = self.instances.pop(args[0], None)
            if inst is not None:
                inst.close()
            return None
        if op == "load":
            env = self._env(args[0])
            return [t.model_dump() for t in env.tools]
        if op == "ping":
            return os.getpid()
        if op == "stats":
            return {"pid": os.getpid(), "instances": len(self.instances), "envs": list(self.envs)}
        raise ValueError(f"unknown worker op {op!r}")


def _limit_memory(limit_bytes: int | None) -> None:
    if not limit_bytes:
        return
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def answer(state: WorkerState, op: str, args: tuple[Any, ...]) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, message)``: the reply a host (process or Ray actor) sends back."""
    try:
        return (True, state.handle(op, args))
    except BundleError as exc:
        return (False, str(exc))
    except MemoryError:
        return (False, "the worker ran out of memory (memory limit reached)")
    except Exception as exc:
        return (False, f"{type(exc).__name__}: {exc}")


# What generated tool code may see of the host's environment: nothing secret.
_KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "PYTHONHASHSEED")


def scrub_environment() -> None:
    """Drop every variable but a few harmless ones, so API keys and tokens stay in the host."""
    for name in list(os.environ):
        if name not in _KEPT_ENV:
            del os.environ[name]


def worker_main(conn: Connection, memory_limit: int | None) -> None:
    """Entry point of a worker process: serve requests until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    scrub_environment()
    _limit_memory(memory_limit)
    state = WorkerState()
    while True:
        try:
            op, args = conn.recv()
        except (EOFError, OSError):
            return
        reply = answer(state, op, args)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as exc:  # an unpicklable payload from tool code
            conn.send((False, f"result could not be sent back: {exc}"))
