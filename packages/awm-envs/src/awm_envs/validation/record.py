"""Remember validation results per bundle content, so ``awm envs list`` can show them cheaply.

A record is keyed by a hash of the bundle's files: editing a bundle makes its
old record invisible instead of wrong. Records live under ``$AWM_CACHE_DIR``
(default ``~/.cache/awm``) in ``validation/``.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BUNDLE_FILES = (
    "manifest.json",
    "schema.sql",
    "seed.sql",
    "app.py",
    "tools.json",
    "tasks.json",
    "verifiers.py",
)


def cache_dir() -> Path:
    root = os.environ.get("AWM_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "awm") / "validation"


def bundle_digest(path: Path) -> str:
    """sha256 over the bundle's own files (names and bytes)."""
    h = hashlib.sha256()
    for name in BUNDLE_FILES:
        f = path / name
        if f.is_file():
            h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _record_path(env_id: str, digest: str) -> Path:
    return cache_dir() / f"{env_id}-{digest[:20]}.json"


def save_record(env_id: str, path: Path, *, proven: int, tasks: int, passed: bool) -> None:
    """Store one environment's outcome; failures to write (read-only home) are not fatal."""
    record = {
        "env_id": env_id,
        "proven": proven,
        "tasks": tasks,
        "passed": passed,
        "validated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    target = _record_path(env_id, bundle_digest(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, target)
    except OSError:
        pass


def load_record(env_id: str, path: Path) -> dict[str, Any] | None:
    """The stored outcome for this exact bundle content, or ``None``."""
    target = _record_path(env_id, bundle_digest(path))
    try:
        data: dict[str, Any] = json.loads(target.read_text())
        return data
    except (OSError, ValueError):
        return None


def status_text(record: dict[str, Any] | None) -> str:
    if record is None:
        return "not validated"
    if record["passed"]:
        return f"proven {record['proven']}/{record['tasks']}"
    return f"FAILED {record['proven']}/{record['tasks']}"
