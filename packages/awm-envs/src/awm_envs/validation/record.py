"""Remember validation results per bundle content, so ``awm envs list`` can show them cheaply.

A record is keyed by the bundle's content digest
(:func:`awm_envs.bundle.identity.digest`): editing a bundle makes its old record
invisible instead of wrong. Records live under ``$AWM_CACHE_DIR``
(default ``~/.cache/awm``) in ``validation/``; the catalog ships its own in
``catalog/validation.json`` (written by ``python -m awm_envs.cli.catalog_files``),
so a fresh install knows its bundles are proven.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awm_core.paths import cache_dir as awm_cache_dir
from awm_envs.bundle import identity

SHIPPED_VALIDATION = "validation.json"


def cache_dir() -> Path:
    """The folder of validation records: ``validation/`` in awm's cache folder."""
    return awm_cache_dir() / "validation"


def _record_path(env_id: str, digest: str) -> Path:
    return cache_dir() / f"{env_id}-{digest[:20]}.json"


def save_record(
    env_id: str,
    path: Path,
    *,
    proven: int,
    tasks: int,
    passed: bool,
    decided_by: dict[str, dict[str, str | None]] | None = None,
) -> None:
    """Store one environment's outcome; failures to write (read-only home) are not fatal.

    ``decided_by`` maps each task id to how it was decided: ``{"by": "code" | "judge" |
    "undecided", "judge_model": SPEC or None}`` (a judge decides AWM-1K sql-mode tasks).
    """
    record: dict[str, Any] = {
        "env_id": env_id,
        "proven": proven,
        "tasks": tasks,
        "passed": passed,
        "validated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if decided_by is not None:
        record["decided_by"] = decided_by
    target = _record_path(env_id, identity.digest(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        os.replace(tmp, target)
    except OSError:
        pass


def load_record(env_id: str, path: Path) -> dict[str, Any] | None:
    """The stored outcome for this exact bundle content, or ``None``."""
    target = _record_path(env_id, identity.digest(path))
    try:
        data: dict[str, Any] = json.loads(target.read_text())
        return data
    except (OSError, ValueError):
        return None


def shipped_validation_path() -> Path:
    """Where the shipped validation records of the catalog live."""
    from awm_envs.bundle.sources import CATALOG_DIR

    return CATALOG_DIR / SHIPPED_VALIDATION


def shipped_record(env_id: str, path: Path) -> dict[str, Any] | None:
    """The shipped validation record of catalog bundle ``path``, if its content is unchanged."""
    try:
        records = json.loads(shipped_validation_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    record = records.get(env_id) if isinstance(records, dict) else None
    if not isinstance(record, dict) or record.get("digest") != identity.digest(path):
        return None
    return {**record, "source": "shipped"}


def validation_record(env_id: str, path: Path) -> dict[str, Any] | None:
    """The last ``awm envs validate`` result for this exact bundle content, if any.

    This machine's record first (``"source": "local"``), else the one shipped with
    the catalog (``"source": "shipped"``); both are keyed by the bundle's content
    hash, so an edited bundle has none. The record holds ``proven``, ``tasks``,
    ``passed``, ``validated_at`` and (records written since judges decide sql-mode
    tasks) ``decided_by`` per task.
    """
    local = load_record(env_id, path)
    if local is not None:
        return {**local, "source": "local"}
    return shipped_record(env_id, path)


def status_text(record: dict[str, Any] | None) -> str:
    """The ``awm envs list`` status: ``proven P/T`` or ``FAILED P/T``, and how many tasks a
    judge decided or were left undecided (AWM-1K sql mode), when the record says."""
    if record is None:
        return "not validated"
    text = f"{'proven' if record['passed'] else 'FAILED'} {record['proven']}/{record['tasks']}"
    by = [d.get("by") for d in (record.get("decided_by") or {}).values() if isinstance(d, dict)]
    extra = [
        f"{n} {words}"
        for n, words in ((by.count("judge"), "by a judge"), (by.count("undecided"), "undecided"))
        if n
    ]
    return f"{text} ({', '.join(extra)})" if extra else text
