"""Bundles packed for the wire: every file of a bundle folder, keyed by its content.

Workers load bundles from the files shipped to them, never from the host's
file system, so any worker can host any environment. Both backends (worker
processes and Ray actors) pack through :class:`PackedBundles`, which packs a
folder again when its fingerprint changes, so an edited bundle is shipped
afresh under a new key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_envs.bundle.identity import Fingerprint, file_hashes, fingerprint, hashes_digest


def _folder_files(path: Path) -> dict[str, bytes]:
    """Every file of a bundle folder by relative path (caches left out): what a worker needs to load it."""
    files: dict[str, bytes] = {}
    for f in sorted(path.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            files[f.relative_to(path).as_posix()] = f.read_bytes()
    return files


@dataclass(frozen=True)
class ShippedBundle:
    """A bundle packed for the wire: a content key, the files' names and sizes, their bytes."""

    key: str
    names: list[list[Any]]
    data: bytes

    @classmethod
    def pack(cls, path: Path) -> ShippedBundle:
        """Pack every file of folder ``path``; the key is their digest (16 hex digits)."""
        files = _folder_files(path)
        return cls(
            hashes_digest(file_hashes(files))[:16],
            [[name, len(data)] for name, data in files.items()],
            b"".join(files.values()),
        )

    def files(self) -> dict[str, bytes]:
        """The packed files again, by relative path."""
        out: dict[str, bytes] = {}
        offset = 0
        for name, size in self.names:
            out[str(name)] = self.data[offset : offset + int(size)]
            offset += int(size)
        return out


class PackedBundles:
    """The packed bundle of each host folder, packed again when the folder's fingerprint changes."""

    def __init__(self) -> None:
        self._packed: dict[str, tuple[Fingerprint, ShippedBundle]] = {}

    def get(self, path: str) -> ShippedBundle:
        """The bundle at host folder ``path``, packed."""
        folder = Path(path)
        print_ = fingerprint(folder)
        cached = self._packed.get(path)
        if cached is not None and not print_:
            return cached[1]  # the folder is gone: workers keep loading the copy shipped so far
        if cached is None or cached[0] != print_:
            cached = (print_, ShippedBundle.pack(folder))
            self._packed[path] = cached
        return cached[1]
