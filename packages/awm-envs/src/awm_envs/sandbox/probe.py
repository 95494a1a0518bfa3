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


def _status_fields() -> dict[str, str]:
    try:
        with open("/proc/self/status") as f:
            return {k: v.strip() for k, v in (ln.split(":", 1) for ln in f if ":" in ln)}
    except OSError:
        return {}


def _others() -> list[int]:
    """Other processes this one can see (the template, spares, bubblewrap's init)."""
    me = os.getpid()
    try:
        return sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me)
    except OSError:
        return []


def _write_other_memory() -> None:
    others = _others()
    if not others:
        raise ProcessLookupError("no other process is visible")
    for pid in others:
        with open(f"/proc/{pid}/mem", "r+b") as f:  # must fail for every one of them
            f.write(b"")


def _signal_others() -> None:
    others = _others()
    if not others:
        raise ProcessLookupError("no other process is visible")
    for pid in others:
        os.kill(pid, 0)  # signal 0: the permission check alone, nothing is delivered


def _libc_call(name: str, *args: Any) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _ptrace_attach() -> None:
    others = _others()
    if not others:
        raise ProcessLookupError("no other process is visible")
    for pid in others:
        _libc_call("ptrace", 16, pid, None, None)  # PTRACE_ATTACH


def _unshare() -> None:
    _libc_call("unshare", 0x10000000)  # CLONE_NEWUSER


def _mount() -> None:
    _libc_call("mount", b"none", b"/tmp", b"tmpfs", 0, None)


def _chroot() -> None:
    os.chroot("/tmp")


def inspect(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """What the sandbox looks like from inside."""
    from awm_envs.sandbox import seccomp

    status = _status_fields()
    seen = {
        "uid (inside)": status.get("Uid", "?").split()[0] if status.get("Uid") else "?",
        "effective capabilities": status.get("CapEff", "?"),
        "seccomp": seccomp.seccomp_line(),
        "read /etc/passwd": _try(_read_passwd),
        "write outside /tmp": _try(_write_home),
        "connect to 127.0.0.1 (host loopback)": "blocked" if _loopback_is_private() else "allowed",
        "connect to the internet": _try(_connect_outside),
        "write another process's memory": _try(_write_other_memory),
        "ptrace another process": _try(_ptrace_attach),
        "signal another process": _try(_signal_others),
        "unshare a user namespace": _try(_unshare),
        "mount": _try(_mount),
        "chroot": _try(_chroot),
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
