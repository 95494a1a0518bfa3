"""A bundle's identity: the files it consists of, a digest of their content, a fingerprint of their state.

The **digest** says *which content* a bundle has: sha256 over ``name NUL
sha256(bytes) LF`` for each file, in name order. It is built from the files'
own sha256 so that a hub content record (``awm-bundle.json``: name -> sha256)
can be checked against its digest without the files; the same value keys
validation records (``catalog/validation.json``, ``$AWM_CACHE_DIR/validation``),
a training manifest's ``bundle_sha256`` and the bundles shipped to workers.

The **fingerprint** only says *whether a folder changed* since it was last
looked at (every file's path, size and mtime): cheap enough to take on every
use, so per-process caches (a loaded environment, a packed bundle, an import
already checked in a sandbox) key on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import stat
from collections.abc import Mapping
from pathlib import Path

MANIFEST = "manifest.json"
SCHEMA_SQL = "schema.sql"
SEED_SQL = "seed.sql"
APP_PY = "app.py"
TOOLS_JSON = "tools.json"
TASKS_JSON = "tasks.json"
VERIFIERS_PY = "verifiers.py"
PRINCIPALS_JSON = "principals.json"  # optional: who owns which rows (docs/safety.md)
# the files a bundle may consist of (docs/environment-format.md), and those it must have: all of
# them are its content (the digest, push/pull, the training rows' check), principals.json too,
# since it decides what counts as another user's data
BUNDLE_FILES = (
    MANIFEST,
    SCHEMA_SQL,
    SEED_SQL,
    APP_PY,
    TOOLS_JSON,
    TASKS_JSON,
    VERIFIERS_PY,
    PRINCIPALS_JSON,
)
REQUIRED_FILES = (MANIFEST, SCHEMA_SQL, SEED_SQL, APP_PY)

Fingerprint = tuple[tuple[str, int, int], ...]


def read_files(path: Path) -> dict[str, bytes]:
    """The bundle files present in folder ``path``, by name (read once: the bytes hashed are the bytes used)."""
    return {name: (path / name).read_bytes() for name in BUNDLE_FILES if (path / name).is_file()}


def file_hashes(files: Mapping[str, bytes]) -> dict[str, str]:
    """``name -> sha256 (hex)`` of each file's bytes."""
    return {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}


def hashes_digest(hashes: Mapping[str, str]) -> str:
    """The digest of files given by their sha256 (see the module docstring), 64 hex digits."""
    h = hashlib.sha256()
    for name in sorted(hashes):
        h.update(f"{name}\0{hashes[name]}\n".encode())
    return h.hexdigest()


def digest(path: Path) -> str:
    """The digest of the bundle in folder ``path``: its bundle files' content, nothing else."""
    return hashes_digest(file_hashes(read_files(path)))


def fingerprint(path: Path) -> Fingerprint:
    """Every file under folder ``path`` (caches left out) with its size and mtime; empty if it is gone.

    Paths are absolute, so two folders never share a fingerprint.
    """
    root = path.resolve()
    out = []
    for f in sorted(root.rglob("*")):
        if "__pycache__" in f.relative_to(root).parts:
            continue
        with contextlib.suppress(OSError):
            st = f.stat()
            if stat.S_ISREG(st.st_mode):
                out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)
