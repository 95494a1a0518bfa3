"""Tools that attack their siblings: what a worker forked from the template tries next door.

Shared by tests/test_template_siblings.py (as root and as uid 65534). Each probe reports
what it reached instead of raising, so a test can say exactly which route held.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/awm-envs/tests"))
from hostile import make_hostile_bundle  # noqa: E402

ROUTES = '''

import fcntl as _fcntl
import os as _os
import glob as _glob
import signal as _signal
import socket as _socket
import threading as _threading


def _peek_memory(pid: int) -> dict:
    """Read, then overwrite, 16 bytes of a mapped, writable page of process ``pid``."""
    out = {}
    try:
        with open(f"/proc/{pid}/maps") as f:
            region = next(line for line in f if line.split()[1].startswith("rw"))
        start = int(region.split("-")[0], 16)
        out["maps"] = True
    except (OSError, StopIteration) as exc:
        out["maps"] = type(exc).__name__
        start = 0x400000
    try:
        with open(f"/proc/{pid}/mem", "rb") as f:
            f.seek(start)
            data = f.read(16)
        out["read"] = len(data) == 16
    except OSError as exc:
        out["read"] = type(exc).__name__
    try:
        with open(f"/proc/{pid}/mem", "r+b") as f:
            f.seek(start)
            before = f.read(16)
            f.seek(start)
            f.write(before)  # the same bytes back: proof of write access, no damage done
        out["write"] = True
    except OSError as exc:
        out["write"] = type(exc).__name__
    return out


@app.post("/probe/memory", operation_id="probe_memory")
def probe_memory(target: str) -> dict:
    """Read and write another process's memory: ``parent`` (the template) or a pid."""
    pid = _os.getppid() if target == "parent" else int(target)
    return _peek_memory(pid)


def _plant_once() -> dict:
    """Append a failing line to every shipped app.py this process can reach in /tmp."""
    reached = {"listed": None, "planted": 0}
    try:
        folders = _glob.glob("/tmp/awm-worker-*")
        _os.listdir("/tmp")
        reached["listed"] = len(folders)
    except OSError as exc:
        reached["listed"] = type(exc).__name__
        folders = []
    mine = _os.environ.get("TMPDIR", "")
    for app_file in [p for f in folders for p in _glob.glob(f + "/*/app.py")]:
        if mine and app_file.startswith(mine.rstrip("/") + "/"):
            continue
        try:
            with open(app_file, "a") as f:
                f.write("\\nraise RuntimeError('planted by a sibling')\\n")
            reached["planted"] += 1
        except OSError:
            pass
    return reached


@app.post("/probe/plant", operation_id="probe_plant")
def probe_plant(seconds: float = 0.0) -> dict:
    """Plant once now; with ``seconds``, keep planting in the background that long."""
    first = _plant_once()
    if seconds > 0:
        import time as _time

        def loop() -> None:
            end = _time.monotonic() + seconds
            while _time.monotonic() < end:
                _plant_once()
                _time.sleep(0.001)

        _threading.Thread(target=loop, daemon=True).start()
    return first


@app.post("/probe/signal", operation_id="probe_signal")
def probe_signal(pid: int) -> dict:
    """SIGSTOP process ``pid`` by every route: kill, its group, and SIGIO through F_SETOWN."""
    out = {}
    for name, send in (
        ("kill", lambda: _os.kill(pid, _signal.SIGSTOP)),
        ("killpg", lambda: _os.killpg(pid, _signal.SIGSTOP)),
    ):
        try:
            send()
            out[name] = "sent"
        except OSError as exc:
            out[name] = type(exc).__name__
    a, b = _socket.socketpair()
    try:
        _fcntl.fcntl(a, _fcntl.F_SETOWN, pid)
        _fcntl.fcntl(a, 10, int(_signal.SIGSTOP))  # F_SETSIG
        _fcntl.fcntl(a, _fcntl.F_SETFL, _fcntl.fcntl(a, _fcntl.F_GETFL) | _os.O_ASYNC)
        b.send(b"x")  # input on a: the kernel sends the owner its signal
        out["sigio"] = "armed"
    except OSError as exc:
        out["sigio"] = type(exc).__name__
    finally:
        a.close()
        b.close()
    return out


@app.post("/probe/drop", operation_id="probe_drop")
def probe_drop(path: str, content: str = "") -> dict:
    """Write ``content`` to ``path``, or (empty content) read it back."""
    try:
        if content:
            with open(path, "w") as f:
                f.write(content)
            return {"wrote": True}
        with open(path) as f:
            return {"read": f.read()}
    except OSError as exc:
        return {"error": type(exc).__name__}


@app.get("/probe/whoami", operation_id="probe_whoami")
def probe_whoami() -> dict:
    """This worker's pid (inside the sandbox), its TMPDIR and its parent."""
    return {"pid": _os.getpid(), "ppid": _os.getppid(), "tmpdir": _os.environ.get("TMPDIR")}
'''


def sibling_bundle(dest: Path, env_id: str = "sibling_library") -> Path:
    """The library fixture with the sibling probes."""
    return make_hostile_bundle(dest, env_id, routes=ROUTES)
