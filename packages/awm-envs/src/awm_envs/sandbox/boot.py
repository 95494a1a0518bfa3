"""First code run inside a sandboxed process: limits, then the entry point.

Run as ``python -I -B boot.py CONFIG`` (by path, so nothing but the standard
library and this package's wire module is imported before the limits are
set). CONFIG is JSON: ``entry`` ("pkg.module:function"), ``preload`` (modules
imported before the memory limit is measured), ``fd`` (the channel socket),
``limits``, ``sys_path`` and ``nproc`` (whether RLIMIT_NPROC is meaningful).
The entry is called as ``function(fd, config)`` and the process exits when it
returns.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import signal
import sys

INSIDE_ENV = "AWM_INSIDE_SANDBOX"


def inside_sandbox() -> bool:
    """Whether this process was started by :class:`~awm_envs.sandbox.process.SandboxProcess`."""
    return os.environ.get(INSIDE_ENV) == "1"


def set_pdeathsig(host_pid: int) -> None:
    """Die with the host even without bubblewrap (Linux only; best effort elsewhere)."""
    if not sys.platform.startswith("linux") or not host_pid:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != host_pid:  # the host died before prctl took effect
            os._exit(1)
    except Exception:
        pass


def _set(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(which, (soft, hard))


def address_space_in_use() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def limit_memory(extra: int) -> None:
    """Cap the address space at what is mapped now plus ``extra`` bytes (one meaning everywhere)."""
    if extra > 0 and sys.platform.startswith("linux"):
        _set(resource.RLIMIT_AS, address_space_in_use() + extra)


def apply_static_limits(limits: dict[str, object], nproc: bool) -> None:
    """Limits that hold for the whole life of the process."""
    _set(resource.RLIMIT_CORE, 0)
    _set(resource.RLIMIT_NOFILE, int(limits.get("open_files", 256)))  # type: ignore[call-overload]
    if nproc:
        _set(resource.RLIMIT_NPROC, int(limits.get("processes", 64)))  # type: ignore[call-overload]


def main() -> None:
    config = json.loads(sys.argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host decides when a sandbox stops
    if not config.get("isolated"):  # under bwrap, --die-with-parent does this
        set_pdeathsig(int(config.get("host_pid", 0)))
    sys.path[:] = [p for p in config.get("sys_path", sys.path) if p]
    os.environ.clear()
    os.environ.update(config.get("env", {}))
    os.environ[INSIDE_ENV] = "1"  # code in here forks for nested jobs instead of nesting sandboxes
    fd = int(config["fd"])
    os.set_inheritable(fd, False)
    # fd 1 is the host's stdout (or /dev/null): point it at stderr so stray prints of
    # generated code can never be mistaken for anything the host reads.
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    limits = config.get("limits", {})
    apply_static_limits(limits, bool(config.get("nproc")))
    # before anything generated is imported: the system calls no sandboxed code needs
    from awm_envs.sandbox import seccomp

    seccomp.confine_process()
    for name in config.get("preload", []):
        importlib.import_module(name)
    module_name, _, function = config["entry"].partition(":")
    entry = getattr(importlib.import_module(module_name), function)
    limit_memory(int(limits.get("memory_bytes", 0)))
    entry(fd, config)


if __name__ == "__main__":
    main()
