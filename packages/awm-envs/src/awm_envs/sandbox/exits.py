"""How a sandboxed process ended, in words (imported inside sandboxes: standard library only)."""

from __future__ import annotations

import contextlib
import signal

_SIGNAL_MEANING = {
    signal.SIGKILL: "killed (SIGKILL: an outside kill, the wall-clock limit, or the kernel's OOM killer)",
    signal.SIGXCPU: "stopped by its CPU time limit (SIGXCPU)",
    signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGBUS: "crashed with a bus error (SIGBUS)",
    signal.SIGFPE: "crashed with an arithmetic fault (SIGFPE)",
    signal.SIGTERM: "terminated (SIGTERM)",
}


def describe_exit(returncode: int | None) -> str:
    """How a sandboxed process ended, in words an agent or a developer can act on.

    bubblewrap reports a child killed by signal N as exit status 128 + N.
    """
    if returncode is None:
        return "is still running"
    sig: int | None = None
    if returncode < 0:
        sig = -returncode
    elif 128 < returncode <= 128 + 64:
        sig = returncode - 128
    if sig is not None:
        with contextlib.suppress(ValueError):
            known = _SIGNAL_MEANING.get(signal.Signals(sig))
            if known:
                return known
        return f"was killed by signal {sig}"
    if returncode == 0:
        return "exited (status 0) without answering"
    return f"exited with status {returncode} (sys.exit or os._exit in the code it ran)"
