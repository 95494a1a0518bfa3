"""Where pulled bundles live: ``$AWM_CACHE_DIR/envs/NAME`` (default ``~/.cache/awm/envs``).

Each pulled bundle folder carries ``.awm-hub.json`` saying where it came from
(endpoint, repository, commit) and the digest it was checked against. The
folder is registered as the ``hub`` environment source (:mod:`awm_envs.plugin`),
so ``awm envs serve NAME`` / ``validate NAME`` find a pulled bundle by name.
This module imports nothing heavy: the plugin reads it at start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from awm_core.paths import cache_dir

ORIGIN_FILE = ".awm-hub.json"


def hub_cache_dir() -> Path:
    """The folder pulled bundles are installed into (one sub-folder per bundle)."""
    return cache_dir() / "envs"


def read_origin(path: Path) -> dict[str, Any] | None:
    """The origin record of a pulled bundle folder, or ``None`` (not pulled, or unreadable)."""
    try:
        data = json.loads((path / ORIGIN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _staging_root() -> Path:
    # outside hub_cache_dir(), so no half-built folder is ever listed as an environment
    root = cache_dir() / "hub-staging"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def staging_dir() -> Iterator[Path]:
    """A scratch folder next to the cache (same file system, so installing is a rename)."""
    tmp = Path(tempfile.mkdtemp(prefix="pull-", dir=_staging_root()))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def install(staged: Path, name: str, files: list[str], origin: dict[str, Any]) -> Path:
    """Move the checked ``files`` of ``staged`` into ``hub_cache_dir()/name``, replacing it whole.

    The new folder is assembled in the staging area and renamed into place, so a
    reader never sees half of one bundle and half of another.
    """
    target = hub_cache_dir() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f"{name}-new-", dir=_staging_root()))
    for file in files:
        shutil.copy2(staged / file, fresh / file)
    (fresh / ORIGIN_FILE).write_text(json.dumps(origin, indent=2) + "\n", encoding="utf-8")
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f"{name}-old-", dir=_staging_root())) / name
        os.replace(target, old)
    os.replace(fresh, target)
    if old is not None:
        shutil.rmtree(old.parent, ignore_errors=True)
    return target
