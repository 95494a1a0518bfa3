"""The one sandbox for generated code: tool code, verifiers and synthesis checks alike.

* :class:`SandboxProcess` - one sandboxed interpreter and a JSON+blobs channel to it
  (environment workers are long-lived ones);
* :class:`ForkServer` - a pre-imported template that forks a fresh child per job, so no
  state survives between untrusted jobs (verifiers, synthesis checks);
* :class:`Limits` - CPU, wall clock, address space, open files, processes;
* :func:`resolve` / :func:`detect` - bubblewrap isolation where the machine has it.

See docs/security.md for what each layer contains and what it does not.
"""

from awm_envs.sandbox.forkserver import ForkServer, SandboxStartError, error_reply
from awm_envs.sandbox.isolation import (
    DISABLE_ENV,
    REQUIRE_ENV,
    Isolation,
    IsolationUnavailable,
    detect,
    resolve,
)
from awm_envs.sandbox.limits import GIB, MIB, Limits
from awm_envs.sandbox.process import SandboxProcess, describe_exit
from awm_envs.sandbox.wire import ChannelClosed, FrameReader, ProtocolError

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
    "Limits",
    "ProtocolError",
    "SandboxProcess",
    "SandboxStartError",
    "describe_exit",
    "detect",
    "error_reply",
    "resolve",
]
