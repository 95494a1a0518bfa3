"""The one sandbox for generated code: tool code, verifiers and synthesis checks alike.

* :class:`SandboxProcess` - one sandboxed interpreter and a JSON+blobs channel to it
  (environment workers are long-lived ones);
* :class:`ForkServer` - a pre-imported template that forks a fresh child per job, so no
  state survives between untrusted jobs (verifiers, synthesis checks);
* :class:`JobPool` - several templates of one job, thread-safe (``run``) and async (``arun``);
* :class:`Limits` - CPU, wall clock, address space, open files, processes;
* :func:`resolve` / :func:`detect` - bubblewrap isolation where the machine has it.

See docs/security.md for what each layer contains and what it does not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module, imported on first use: code inside a sandbox imports this package too, and
# every module it pulls in is copied into each forked job (fork time grows with the heap).
_EXPORTS = {
    "ForkServer": "forkserver",
    "SandboxStartError": "forkserver",
    "error_reply": "forkserver",
    "DISABLE_ENV": "isolation",
    "REQUIRE_ENV": "isolation",
    "Isolation": "isolation",
    "IsolationUnavailable": "isolation",
    "detect": "isolation",
    "resolve": "isolation",
    "JobPool": "jobpool",
    "GIB": "limits",
    "MIB": "limits",
    "Limits": "limits",
    "SandboxProcess": "process",
    "describe_exit": "exits",
    "ChannelClosed": "wire",
    "FrameReader": "wire",
    "ProtocolError": "wire",
}

if TYPE_CHECKING:
    from awm_envs.sandbox.exits import describe_exit
    from awm_envs.sandbox.forkserver import ForkServer, SandboxStartError, error_reply
    from awm_envs.sandbox.isolation import (
        DISABLE_ENV,
        REQUIRE_ENV,
        Isolation,
        IsolationUnavailable,
        detect,
        resolve,
    )
    from awm_envs.sandbox.jobpool import JobPool
    from awm_envs.sandbox.limits import GIB, MIB, Limits
    from awm_envs.sandbox.process import SandboxProcess
    from awm_envs.sandbox.wire import ChannelClosed, FrameReader, ProtocolError


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'awm_envs.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(f"awm_envs.sandbox.{module}"), name)


__all__ = [
    "DISABLE_ENV",
    "GIB",
    "MIB",
    "REQUIRE_ENV",
    "ChannelClosed",
    "ForkServer",
    "FrameReader",
    "Isolation",
    "IsolationUnavailable",
    "JobPool",
    "Limits",
    "ProtocolError",
    "SandboxProcess",
    "SandboxStartError",
    "describe_exit",
    "detect",
    "error_reply",
    "resolve",
]
