"""A pids cgroup per sandboxed process: the process-count bound that holds for root too.

Why: ``RLIMIT_NPROC`` is not enforced for processes whose host uid is 0 (the
kernel exempts the initial user namespace's root, and a user namespace does
not change the host uid it counts), and a PID namespace bounds how long
processes live, not how many there are. Training containers and CI run as
root, so a fork bomb in generated code could exhaust the host's ``pid_max``.
Where the host lets this process create a child cgroup with the ``pids``
controller (cgroup v1's ``pids`` hierarchy, or a cgroup v2 subtree with
``pids`` delegated), each sandbox gets one, ``pids.max`` set, and bubblewrap
is placed in it before it starts anything. :func:`bound` says which bound
applies on this machine; ``awm envs sandbox`` prints it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import secrets
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def _own(controller: str) -> str | None:
    """This process's cgroup path in ``controller``'s hierarchy ("" for v2), from /proc."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


@functools.cache
def _parent() -> Path | None:
    """A cgroup folder where a child with a working ``pids.max`` can be made, or None."""
    v1 = _own("pids")
    if v1 is not None and (CGROUP_ROOT / "pids").is_dir():
        candidate = CGROUP_ROOT / "pids" / v1.lstrip("/")
        if _usable(candidate):
            return candidate
    for line in _read_lines(Path("/proc/self/cgroup")):
        if line.startswith("0::"):
            base = CGROUP_ROOT / "unified" if (CGROUP_ROOT / "unified").is_dir() else CGROUP_ROOT
            candidate = base / line[3:].lstrip("/")
            enabled = _read_lines(candidate / "cgroup.subtree_control")
            if enabled and "pids" in enabled[0].split() and _usable(candidate):
                return candidate
    return None


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def _usable(folder: Path) -> bool:
    """Whether a child cgroup can be made here with its own ``pids.max`` (tried once)."""
    probe = folder / f"awm-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        (probe / "pids.max").write_text("8")
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@functools.cache
def _sweep_once(parent: Path) -> None:
    """Remove the empty sandbox cgroups of processes that are gone (once per process).

    A process killed outright (SIGKILL, a crash) leaves its sandboxes' cgroups behind;
    the kernel refuses to remove one that still holds a process, so this only ever
    removes empty ones, and only those whose creator (the pid in the name) has exited,
    never one a live process is about to join.
    """
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        parts = entry.name.split("-")
        if len(parts) < 4 or parts[0] != "awm" or parts[1] != "sandbox" or not parts[2].isdigit():
            continue
        if Path(f"/proc/{parts[2]}").exists():
            continue
        with contextlib.suppress(OSError):
            entry.rmdir()


class PidsCgroup:
    """One sandbox's pids cgroup: made, joined by the sandbox's first process, removed."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder = folder
        self.limit = limit

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        """A new cgroup allowing ``limit`` processes, or None where the host offers none.

        The name carries a random part: a cgroup left behind by a process that was killed
        (it cannot remove its own) must never make a later process whose pid is the same
        fail to create its own and so run without a process-count bound.
        """
        parent = _parent()
        if parent is None:
            return None
        _sweep_once(parent)
        for _ in range(3):
            folder = parent / f"awm-sandbox-{os.getpid()}-{next(_counter)}-{secrets.token_hex(4)}"
            try:
                folder.mkdir()
            except FileExistsError:
                continue
            except OSError:
                return None
            try:
                (folder / "pids.max").write_text(str(limit))
            except OSError:
                with contextlib.suppress(OSError):
                    folder.rmdir()
                return None
            return cls(folder, limit)
        return None

    def join(self) -> None:
        """Move the calling process into the cgroup (``preexec_fn``: before bwrap runs)."""
        with open(self.folder / "cgroup.procs", "w") as f:
            f.write("0")

    def remove(self) -> None:
        """Remove the cgroup once its processes are gone (best effort)."""
        with contextlib.suppress(OSError):
            self.folder.rmdir()


def bound(processes: int) -> str:
    """Which process-count bound applies to sandboxes started by this process."""
    if _parent() is not None:
        return f"pids cgroup ({processes} processes for generated code per sandbox)"
    if os.getuid() != 0:
        return f"RLIMIT_NPROC ({processes} per sandboxed process, counted per host uid)"
    return "none: running as root without a writable pids cgroup (see docs/security.md)"


__all__ = ["PidsCgroup", "bound"]
