"""Atomic file writes: a reader (or a resumed run) never sees a half-written file.

Every artifact goes to a temporary file in the same folder, is flushed and
fsynced, then moved into place with :func:`os.replace`, which is atomic on
POSIX and Windows when source and target share a file system. A run killed at
any instant leaves either the old file, the new file, or a stray ``.tmp-*``
file that nothing reads.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that ``path`` is never partially written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 text version of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON (pydantic models are dumped first) atomically, with sorted keys for diffability."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def atomic_replace_dir(staging: Path, target: Path) -> None:
    """Move a fully written ``staging`` folder to ``target``, replacing an older one.

    A folder cannot be swapped in one system call when the target exists, so
    the old one is first renamed aside; a crash between the two renames leaves
    ``target`` absent (the bundle is then simply rebuilt on resume), never half
    old and half new.
    """
    if target.exists():
        aside = target.with_name(f".old-{target.name}-{os.getpid()}")
        os.replace(target, aside)
        os.replace(staging, target)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
