"""Jobs that report what code inside the sandbox can see and do (``awm envs sandbox``).

They are the sandbox's self-test: each probe tries something generated code
must not be able to do and says whether it worked.
"""

from __future__ import annotations

import os
import socket
from typing import Any


def _try(fn: Any) -> str:
    try:
        fn()
    except Exception as exc:
        return f"blocked ({type(exc).__name__})"
    return "allowed"


def _read_passwd() -> None:
    with open("/etc/passwd") as f:
        f.read()


def _connect_outside() -> None:
    with socket.create_connection(("1.1.1.1", 53), timeout=0.5):
        pass


def _write_home() -> None:
    with open(os.path.join(os.path.expanduser("~root"), ".awm-sandbox-probe"), "w") as f:
        f.write("x")


def inspect(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """What the sandbox looks like from inside."""
    seen = {
        "read /etc/passwd": _try(_read_passwd),
        "write outside /tmp": _try(_write_home),
        "connect to 127.0.0.1 (host loopback)": "blocked" if _loopback_is_private() else "allowed",
        "connect to the internet": _try(_connect_outside),
        "environment variables": sorted(os.environ),
        "pid": os.getpid(),
    }
    return {"status": "ok", "seen": seen}


def _loopback_is_private() -> bool:
    """Under a network namespace the loopback is a different, empty one: check by interface list."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return True
    return names == ["lo"] and not os.path.exists("/sys/class/net/eth0")


def echo(header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
    """Round trip (benchmarks, tests): the header back with the blobs reversed."""
    return {"status": "ok", "echo": header}, [b[::-1] for b in blobs]


def run_python(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """Run ``header['code']`` with full builtins: the OS layer alone must contain it (tests)."""
    scope: dict[str, Any] = {}
    exec(header["code"], scope)  # noqa: S102 - deliberately untrusted, that is the point
    return {"status": "ok", "result": repr(scope.get("result"))}
