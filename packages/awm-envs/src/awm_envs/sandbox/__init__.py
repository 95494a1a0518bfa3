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

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
