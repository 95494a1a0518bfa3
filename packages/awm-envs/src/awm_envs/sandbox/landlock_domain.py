"""A Landlock domain per forked sandbox process: what keeps siblings apart.

Why: processes forked from one sandboxed template (environment workers, see
:mod:`awm_envs.pool.worker_template`) share its bubblewrap sandbox: one uid, one
``/tmp``, one PID namespace. Permission bits cannot separate processes of the same
uid, and with no capabilities inside, neither can a mount namespace or a uid per
worker. Landlock can: an unprivileged process confines itself, and the kernel then
refuses, for it and everything it starts,

* file access outside what it was granted: the interpreter's folders read-only, its
  own folder read-write, nothing of ``/tmp`` or ``/dev/shm`` that siblings write to;
* signals to any process outside its domain (the template, siblings, bubblewrap),
  by every route the kernel has (``kill``, ``tgkill``, ``F_SETOWN`` SIGIO/SIGURG);
* ``ptrace`` and ``/proc/PID/mem`` of processes outside its domain;
* abstract UNIX sockets bound outside its domain, and TCP ``bind``/``connect``.

Signal scoping needs Landlock ABI 6 (Linux 6.12); where the kernel offers less,
:func:`unavailable` says why and template forking is refused (each worker then
gets a sandbox of its own).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

MIN_ABI = 6  # LANDLOCK_SCOPE_SIGNAL and LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET

# Device files generated code may open read-write (everything else of /dev read-only).
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    try:
        import landlockpy
    except Exception:  # not Linux, or the package is missing
        return 0
    try:
        return int(landlockpy.abi_version()) if landlockpy.supported() else 0
    except Exception:
        return 0


def unavailable() -> str | None:
    """None where a domain that scopes signals can be entered here; otherwise why not."""
    version = abi()
    if version == 0:
        return "the kernel offers no Landlock (Linux >= 6.12 with landlock in the LSM list)"
    if version < MIN_ABI:
        return f"Landlock ABI {version} cannot scope signals (ABI {MIN_ABI}, Linux 6.12, needed)"
    return None


def enter(*, read: Iterable[str], write: Iterable[str]) -> None:
    """Confine this thread and its future children (irreversible).

    ``read`` paths (files or folders) are granted reading and executing, ``write``
    folders every file right; nothing else of the file system is reachable. Raises
    :class:`OSError` (or landlockpy's ``LandlockError``) when the kernel refuses, so a
    caller never runs on believing it is confined.
    """
    from landlockpy import AccessFS, AccessNet, Ruleset, Scope

    problem = unavailable()
    if problem is not None:
        raise OSError(problem)
    read_rights = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
    with Ruleset(
        handled_net=AccessNet.BIND_TCP | AccessNet.CONNECT_TCP,
        scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET,
    ) as ruleset:
        every_right = ruleset.handled_fs
        for path in read:
            if os.path.exists(path):  # READ_DIR applies to folders only
                file_rights = read_rights & ~AccessFS.READ_DIR
                ruleset.allow_path(path, read_rights if os.path.isdir(path) else file_rights)
        for device in _DEVICES:
            if os.path.exists(device):
                ruleset.allow_path(device, AccessFS.READ_FILE | AccessFS.WRITE_FILE)
        for path in write:
            ruleset.allow_path(path, every_right)
        ruleset.restrict()


def mounted_read_paths() -> list[str]:
    """What this sandbox mounts from the host, read-only: each mount point but the private
    scratch ones (``/``, ``/tmp``, ``/dev`` with ``/dev/shm``), from ``/proc/self/mountinfo``.

    Inside bubblewrap these are exactly the interpreter's folders, the system folders,
    ``/proc`` and the paths the host granted; the template's workers are granted the same,
    no more (of ``/dev``, only the device files :func:`enter` grants).
    """
    skip = {"/", "/tmp", "/dev"}
    points: list[str] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4:
                point = _unescape(fields[4])
                if point not in skip and not point.startswith(("/tmp/", "/dev/")):
                    points.append(point)
    return sorted(set(points))


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


__all__ = ["MIN_ABI", "abi", "enter", "mounted_read_paths", "unavailable"]
