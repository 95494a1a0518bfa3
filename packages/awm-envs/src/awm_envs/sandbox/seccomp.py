"""System-call filters for sandboxed processes (seccomp, through libseccomp).

Why, on top of an unprivileged uid with no capabilities: the kernel calls that
reach another process or the kernel itself are the ones a sandbox escape would
chain, and none of them is needed by tool code or a verifier. Two filters:

* :func:`confine_process`, installed by every sandboxed interpreter before it
  imports anything generated: ``ptrace``, ``process_vm_readv/writev``,
  ``mount``/``umount2``, ``unshare``, ``setns``, ``pivot_root``, ``chroot``,
  ``bpf``, ``perf_event_open``, ``kexec_*``, module loading, ``keyctl``,
  ``userfaultfd`` and their kin fail with ``EPERM``.
* :func:`confine_signals`, installed by each forked job before it runs: signals
  may go to the job's own process and nowhere else, so a job cannot stop or
  kill the warm spares waiting beside it, its template, or bubblewrap's init
  (filters stack: the first one stays in force).

Both fail with ``EPERM`` instead of killing the process, so generated code that
probes gets a clear Python error. Where libseccomp is missing (not Linux, a
minimal image), :func:`status` says so and ``awm envs sandbox`` reports it.
"""

from __future__ import annotations

import contextlib
import errno
import struct
import tempfile
from typing import Any

DENIED: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fspick",
    "unshare",
    "setns",
    "pivot_root",
    "chroot",
    "bpf",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "uselib",
)
# Signal-sending calls whose first argument is the target process (group) id.
_SIGNAL_TO_PID = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
# Signal-sending calls a job never needs at all.
_SIGNAL_DENIED = ("tkill", "pidfd_send_signal", "pidfd_open", "pidfd_getfd")

_state = "not installed"
# The per-job filter is compiled once (in the template) for this stand-in pid, and each
# spare writes its own pid over it and loads it: a few microseconds per spare instead of
# building a filter through libseccomp (most of a millisecond) on every fork.
_PID_SENTINEL = 0x7A3C5E1F


# glibc's sonames: the dynamic loader finds them through ld.so.cache. pyseccomp asks
# ``ctypes.util.find_library``, which runs ``ldconfig -p`` in a subprocess (~20 ms per
# sandbox start); the sonames are tried first, the real lookup when they do not load.
_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def _library() -> Any:
    """pyseccomp (libseccomp through ctypes), or the reason it cannot be used."""
    import sys

    if "pyseccomp" in sys.modules:
        return sys.modules["pyseccomp"]
    import ctypes.util

    real = ctypes.util.find_library
    ctypes.util.find_library = lambda name: _SONAMES.get(name) or real(name)
    try:
        import pyseccomp
    except Exception:  # not glibc: the sonames did not load; try the real lookup
        sys.modules.pop("pyseccomp", None)
        ctypes.util.find_library = real
        try:
            import pyseccomp
        except Exception as exc:  # ImportError, or OSError when libseccomp is absent
            return f"libseccomp unavailable ({type(exc).__name__}: {exc})"
    finally:
        ctypes.util.find_library = real
    return pyseccomp


def _deny(flt: Any, lib: Any, names: tuple[str, ...], *args: Any) -> None:
    for name in names:
        # not a system call on this architecture or kernel: nothing to refuse
        with contextlib.suppress(RuntimeError, ValueError, OSError):
            flt.add_rule(lib.ERRNO(errno.EPERM), name, *args)


def confine_process() -> str:
    """Install the process-wide filter (irreversible); returns the state for reports."""
    global _state
    lib = _library()
    if isinstance(lib, str):
        _state = lib
        return _state
    flt = lib.SyscallFilter(lib.ALLOW)
    _deny(flt, lib, DENIED)
    flt.load()  # sets no_new_privs too (libseccomp's default), as an unprivileged load needs
    _state = f"on ({len(DENIED)} calls refused)"
    return _state


def _signal_filter(lib: Any, pid: int) -> Any:
    flt = lib.SyscallFilter(lib.ALLOW)
    _deny(flt, lib, _SIGNAL_TO_PID, lib.Arg(0, lib.NE, pid))
    _deny(flt, lib, _SIGNAL_DENIED)
    return flt


class _Prepared:
    """The compiled per-job filter, ready to load: its buffer, where the pid goes, ``prctl``.

    Everything is made in the template, so a spare touches one buffer page and makes one
    system call (a fork's first write to each shared page costs a page fault).
    """

    def __init__(self, program: bytes, offsets: list[int]) -> None:
        import ctypes

        class _SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self.buffer = ctypes.create_string_buffer(program, len(program))
        self.offsets = offsets
        self.fprog = _SockFprog(len(program) // 8, ctypes.addressof(self.buffer))
        self.fprog_ref = ctypes.byref(self.fprog)
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        self.errno = ctypes.get_errno

    def load(self, pid: int) -> None:
        for offset in self.offsets:
            struct.pack_into("=I", self.buffer, offset, pid)
        # PR_SET_SECCOMP, SECCOMP_MODE_FILTER; no_new_privs is already set (bubblewrap, or
        # the process-wide filter's load)
        if self.prctl(22, 2, self.fprog_ref, 0, 0) != 0:
            raise OSError(self.errno(), "loading the per-job seccomp filter failed")


_prepared: _Prepared | None = None


def prepare_signal_filter() -> None:
    """Compile the per-job filter once (a template calls this before forking its spares)."""
    global _prepared
    lib = _library()
    if isinstance(lib, str) or _prepared is not None:
        return
    with tempfile.TemporaryFile() as sink:
        _signal_filter(lib, _PID_SENTINEL).export_bpf(sink)
        sink.seek(0)
        program = sink.read()
    if not program or len(program) % 8:
        return
    offsets = [
        i * 8 + 4
        for i, (_, _, _, k) in enumerate(struct.iter_unpack("=HBBI", program))
        if k == _PID_SENTINEL
    ]
    if offsets:
        _prepared = _Prepared(program, offsets)


def confine_signals(pid: int) -> None:
    """Let this process (``pid``, the caller) signal only itself from now on."""
    if _prepared is not None:
        _prepared.load(pid)
        return
    lib = _library()
    if isinstance(lib, str):
        return
    _signal_filter(lib, pid).load()


def status() -> str:
    """What :func:`confine_process` did in this process."""
    return _state


def seccomp_line() -> str:
    """The kernel's own account (``Seccomp:`` / ``Seccomp_filters:`` of /proc/self/status)."""
    try:
        with open("/proc/self/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return "unknown"
    mode = {"0": "off", "1": "strict", "2": "filter"}.get(fields.get("Seccomp", "").strip(), "?")
    filters = fields.get("Seccomp_filters", "").strip()
    return f"{mode} ({filters} filters)" if filters else mode


__all__ = [
    "DENIED",
    "confine_process",
    "confine_signals",
    "prepare_signal_filter",
    "seccomp_line",
    "status",
]
