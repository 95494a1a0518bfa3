"""Bundles packed for the wire: every file of a bundle folder, keyed by its content.

Workers load bundles from the files shipped to them, never from the host's
file system, so any worker can host any environment.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def bundle_files(path: Path) -> dict[str, bytes]:
    """Every file of a bundle folder by relative path (caches left out): what a worker needs to load it."""
    files: dict[str, bytes] = {}
    for f in sorted(path.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files[f.relative_to(path).as_posix()] = f.read_bytes()
    return files


def bundle_digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class ShippedBundle:
    """A bundle packed for the wire: a content key, the files' names and sizes, their bytes."""

    key: str
    names: list[list[Any]]
    data: bytes

    @classmethod
    def pack(cls, path: Path) -> ShippedBundle:
        files = bundle_files(path)
        return cls(
            bundle_digest(files),
            [[name, len(data)] for name, data in files.items()],
            b"".join(files.values()),
        )


def _fingerprint(path: Path) -> tuple[Any, ...]:
    out = []
    for f in sorted(path.rglob("*")):
        if "__pycache__" in f.parts:
            continue
        with contextlib.suppress(OSError):
            st = f.stat()
            out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)
