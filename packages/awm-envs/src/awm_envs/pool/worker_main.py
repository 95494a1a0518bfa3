"""The code that runs inside a sandbox worker (a :class:`~awm_envs.sandbox.SandboxProcess`) or a Ray actor.

A worker hosts many instances of any number of environments and answers one
request at a time. In a sandbox worker (:func:`serve`) requests and replies
are :mod:`awm_envs.sandbox.wire` messages: a JSON header, and raw blobs for
database images and shipped bundle files - never pickles, because the host
must not unpickle what a process running generated code wrote. The worker
never raises to its host: every failure becomes an error reply. What it
cannot survive (a hang, a segfault, ``os._exit``, the memory limit) is the
host's business: the host kills the worker's sandbox (every process in it)
and replaces it (see :mod:`awm_envs.pool.remote`).

Bundles are shipped, not mounted: the host sends a bundle's files once per
worker (``ship``) and the worker writes them to its private ``/tmp``, so a
worker sees nothing of the host's file system but the interpreter, and any
worker (a warm spare included) can host any environment.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.models import ToolResult
from awm_envs.errors import BundleError
from awm_envs.sandbox import wire

if TYPE_CHECKING:  # the runtime is imported where bundles load (in workers), not by the host
    from awm_envs.runtime.environment import Environment
    from awm_envs.runtime.instance import Instance


def result_to_wire(result: ToolResult) -> dict[str, Any]:
    """The wire form of a ToolResult (plain JSON data)."""
    return {
        "content": result.content,
        "is_error": result.is_error,
        "error_type": result.error_type,
        "latency_s": result.latency_s,
    }


def result_from_wire(data: Any) -> ToolResult:
    """A ToolResult from its wire form; raises ValueError for anything else (a worker running
    hostile code can send anything, and the host must not trip over it)."""
    if not isinstance(data, dict):
        raise ValueError(f"a tool result that is not an object: {type(data).__name__}")
    error_type = data.get("error_type")
    latency = data.get("latency_s") or 0.0
    if error_type is not None and not isinstance(error_type, str):
        raise ValueError("a tool result with a non-text error_type")
    if not isinstance(latency, int | float):
        raise ValueError("a tool result with a non-numeric latency")
    return ToolResult(
        content=data.get("content"),
        is_error=bool(data.get("is_error")),
        error_type=error_type,
        latency_s=float(latency),
    )


class WorkerState:
    """Environments and instances living in one worker; ``handle`` is the whole protocol."""

    def __init__(self) -> None:
        self.envs: dict[str, Environment] = {}
        self.instances: dict[str, Instance] = {}

    def _env(self, path: str) -> Environment:
        env = self.envs.get(path)
        if env is None:
            from awm_envs.bundle.loader import load_bundle
            from awm_envs.runtime.environment import Environment

            env = Environment(load_bundle(Path(path)))
            self.envs[path] = env
        return env

    def handle(self, op: str, args: tuple[Any, ...] | list[Any]) -> Any:
        """Run one request; raise only for protocol errors (reported as ``(False, msg)``)."""
        if op == "call":
            iid, name, arguments = args
            inst = self.instances.get(iid)
            if inst is None:
                return {
                    "content": f"instance {iid} does not exist in this worker",
                    "is_error": True,
                    "error_type": "environment_error",
                    "latency_s": 0.0,
                }
            return result_to_wire(inst.call_tool_sync(name, arguments))
        if op == "create":
            path, iid = args
            env = self._env(path)
            self.instances[iid] = env.instance(iid)
            return [t.model_dump(mode="json") for t in env.tools]
        if op == "reset":
            self.instances[args[0]].reset_sync()
            return None
        if op == "snapshot":
            return self.instances[args[0]].snapshot_sync()
        if op == "restore":
            self.instances[args[0]].restore_sync(args[1])
            return None
        if op == "query":  # read-only SQL; rows as lists (JSON on the wire)
            iid, sql, params = args
            return [list(row) for row in self.instances[iid].query_sync(sql, tuple(params))]
        if op == "close":
            inst = self.instances.pop(args[0], None)
            if inst is not None:
                inst.close_sync()
            return None
        if op == "load":
            return [t.model_dump(mode="json") for t in self._env(args[0]).tools]
        if op == "describe":  # everything `awm envs show` needs, and the template image
            env = self._env(args[0])
            bundle = env.bundle
            info = {
                "manifest": bundle.manifest.model_dump(mode="json"),
                "tools": [t.model_dump(mode="json") for t in env.tools],
                "tasks": [t.model_dump(mode="json") for t in bundle.tasks],
                "tables": list(bundle.tables),
            }
            return info, bundle.template
        if op == "ping":
            return os.getpid()
        if op == "stats":
            return {"pid": os.getpid(), "instances": len(self.instances), "envs": list(self.envs)}
        raise ValueError(f"unknown worker op {op!r}")


def answer(state: WorkerState, op: str, args: tuple[Any, ...] | list[Any]) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, message)``: the reply a host (process or Ray actor) sends back."""
    try:
        return (True, state.handle(op, args))
    except BundleError as exc:
        return (False, str(exc))
    except MemoryError:
        return (False, "the worker ran out of memory (memory limit reached)")
    except Exception as exc:
        return (False, f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- sandbox worker


class _Shipped:
    """Bundles the host shipped to this worker: key -> local folder, and the host's name for it."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.local: dict[str, str] = {}
        self.host: dict[str, str] = {}

    def write(self, key: str, host_path: str, names: list[list[Any]], data: bytes) -> None:
        if key in self.local:
            return
        if not key.isalnum():
            raise ValueError(f"bad bundle key {key!r}")
        folder = self.root / key
        tmp = self.root / f".{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        offset = 0
        for name, size in names:
            rel = Path(str(name))
            if rel.is_absolute() or ".." in rel.parts:
                raise ValueError(f"bad file name in a shipped bundle: {name!r}")
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data[offset : offset + int(size)])
            offset += int(size)
        tmp.rename(folder)
        self.local[key] = str(folder)
        self.host[key] = host_path

    def path(self, key: str) -> str:
        local = self.local.get(key)
        if local is None:
            raise ValueError(f"bundle {key} was not shipped to this worker")
        return local

    def to_host(self, text: str) -> str:
        """Error messages name the host's bundle folder, not this worker's copy."""
        for key, local in self.local.items():
            text = text.replace(local, self.host[key])
        return text


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (tools return JSON already; anything else becomes text)."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))


def _reply(shipped: _Shipped, ok: bool, value: Any) -> wire.Message:
    if not ok:
        return {"ok": False, "error": shipped.to_host(str(value))}, []
    if isinstance(value, bytes | bytearray | memoryview):
        return {"ok": True, "blob": True}, [bytes(value)]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bytes):
        return {"ok": True, "value": value[0], "blob": True}, [value[1]]
    return {"ok": True, "value": value}, []


def _decode_args(header: dict[str, Any], blobs: list[bytes]) -> list[Any]:
    args = list(header.get("args") or [])
    return [blobs[a["~blob"]] if isinstance(a, dict) and "~blob" in a else a for a in args]


def respond(
    state: WorkerState, shipped: _Shipped, header: dict[str, Any], blobs: list[bytes]
) -> wire.Message:
    """The reply to one request (``ship`` or any :meth:`WorkerState.handle` op); never raises.

    A :class:`BundleError` keeps every problem (``problems``), for a host that lists them.
    """
    op = str(header.get("op", ""))
    try:
        args = _decode_args(header, blobs)
        if op == "ship":
            key, host_path, names = args[0], args[1], args[2]
            shipped.write(str(key), str(host_path), names, args[3])
            return _reply(shipped, True, None)
        if op in ("create", "load", "describe"):
            args[0] = shipped.path(str(args[0]))
        try:
            return _reply(shipped, True, state.handle(op, args))
        except MemoryError:
            raise
        except BundleError as exc:
            reply = _reply(shipped, False, exc)
            reply[0]["problems"] = [
                [p.file, p.field, shipped.to_host(p.message)] for p in exc.problems
            ]
            return reply
        except Exception as exc:
            return _reply(shipped, False, f"{type(exc).__name__}: {exc}")
    except MemoryError:
        return {"ok": False, "error": "the worker ran out of memory (memory limit reached)"}, []
    except Exception as exc:  # a malformed request: answer, never die
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, []


def describe_job(header: dict[str, Any], blobs: list[bytes]) -> wire.Message:
    """A fork-per-job entry (:mod:`awm_envs.sandbox.forkhost`): ship one bundle, describe it.

    Why a job and not a worker: checking that an untrusted ``app.py`` imports is one
    request, so a fork of a template that has FastAPI, SQLAlchemy and pydantic imported
    already (:data:`~awm_envs.pool.workers.PRELOAD`) does it in a fraction of a fresh
    interpreter's start, and takes whatever the import did with it when it exits.
    ``header``: ``root`` (a folder of this sandbox to write the files in), ``key``,
    ``host_path``, ``names``; ``blobs[0]``: the bundle's files (:class:`ShippedBundle`).
    """
    shipped = _Shipped(str(header["root"]))
    key = str(header["key"])
    ship = {"op": "ship", "args": [key, header["host_path"], header["names"], {"~blob": 0}]}
    shipped_reply = respond(WorkerState(), shipped, ship, blobs[:1])
    if not shipped_reply[0].get("ok"):
        return shipped_reply
    return respond(WorkerState(), shipped, {"op": "describe", "args": [key]}, [])


def serve(fd: int, config: dict[str, Any]) -> None:
    """Entry point of a sandbox worker (see :mod:`awm_envs.sandbox.boot`): serve until the channel closes."""
    os.set_blocking(fd, True)
    state = WorkerState()
    shipped = _Shipped(str(config.get("root") or "/tmp/awm-bundles"))
    wire.write_message(fd, {"ready": True, "pid": os.getpid()})
    while True:
        try:
            msg = wire.read_message(fd)
        except (wire.ChannelClosed, wire.ProtocolError, OSError):
            return
        if msg is None:
            return
        header, blobs = msg
        reply = respond(state, shipped, header, blobs)
        try:
            wire.write_message(fd, *reply)
        except (wire.ChannelClosed, OSError):
            return
        except (TypeError, ValueError):  # not JSON (encoding fails before anything is written)
            header = reply[0]
            try:
                wire.write_message(
                    fd, {**header, "value": _jsonable(header.get("value"))}, reply[1]
                )
            except (TypeError, ValueError) as exc:
                wire.write_message(
                    fd, {"ok": False, "error": f"the reply could not be sent: {exc}"}
                )


__all__ = [
    "WorkerState",
    "answer",
    "describe_job",
    "respond",
    "result_from_wire",
    "result_to_wire",
    "serve",
]
