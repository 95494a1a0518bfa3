"""Resource limits for sandboxed processes, with one meaning each wherever they are used."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True)
class Limits:
    """What one sandboxed process (or one job forked in it) may use.

    ``memory_bytes`` is the address space the code may add on top of what the
    process already maps when the code starts (the interpreter and its
    pre-imported modules), so the same number means the same headroom for a
    verifier job that starts at 20 MB and a tool worker that starts at 120 MB.
    ``cpu_s`` and ``wall_s`` apply to one job or one call; ``open_files`` is per
    process. ``processes`` bounds a whole sandbox (a template with its jobs, or a
    worker) through a pids cgroup where the host offers one, root included, and
    otherwise each process through ``RLIMIT_NPROC``, which the kernel does not
    apply to root (see :mod:`awm_envs.sandbox.cgroups` and docs/security.md).
    """

    cpu_s: float = 5.0
    wall_s: float = 10.0
    memory_bytes: int = 512 * MIB
    open_files: int = 256
    processes: int = 64
    max_output_bytes: int = 64 * MIB

    def with_(self, **changes: Any) -> Limits:
        """A copy with some limits changed (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Limits:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})
