"""Where environments come from: catalog folders, ``AWM_ENV_PATH`` and plugin sources.

A *source* is an :class:`awm_core.contracts.EnvSource` (``list_ids()`` and
``path(env_id)``) registered through the ``register_env_sources`` hook; the bundles shipped inside this package are
registered that way too (see :mod:`awm_envs.plugin`). Every command also takes a
bundle folder path in place of an id.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from awm_envs.errors import EnvironmentNotFoundError

if TYPE_CHECKING:
    from awm_core.contracts import EnvSource

ENV_PATH_VAR = "AWM_ENV_PATH"
CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"


@dataclass(frozen=True)
class FolderSource:
    """A folder whose sub-folders with a ``manifest.json`` are bundles (id = folder name)."""

    root: Path

    def list_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "manifest.json").is_file())

    def path(self, env_id: str) -> Path:
        candidate = self.root / env_id
        if env_id and "/" not in env_id and (candidate / "manifest.json").is_file():
            return candidate
        raise KeyError(env_id)


def is_bundle_dir(path: Path) -> bool:
    """A folder with a manifest.json (the rest is checked when it loads)."""
    return path.is_dir() and (path / "manifest.json").is_file()


def env_path_folders() -> list[Path]:
    """The folders listed in ``AWM_ENV_PATH`` (``os.pathsep``-separated)."""
    raw = os.environ.get(ENV_PATH_VAR, "")
    return [Path(p) for p in raw.split(os.pathsep) if p.strip()]


def all_sources(extra: list[Path] | None = None) -> dict[str, EnvSource]:
    """``{source name: source}``: ``--catalog`` folders, then ``AWM_ENV_PATH``, then plugins."""
    from awm_core.registry import get_env_sources

    sources: dict[str, EnvSource] = {}
    for folder in extra or []:
        sources[f"dir:{folder}"] = FolderSource(Path(folder))
    for folder in env_path_folders():
        sources.setdefault(f"env:{folder}", FolderSource(folder))
    for name, source in get_env_sources().items():
        sources.setdefault(name, source)
    return sources


def list_envs(extra: list[Path] | None = None) -> list[tuple[str, str, Path]]:
    """``(env_id, source name, path)`` for every environment every source offers."""
    found: list[tuple[str, str, Path]] = []
    seen: set[str] = set()
    for name, source in all_sources(extra).items():
        for env_id in source.list_ids():
            if env_id in seen:
                continue  # earlier sources shadow later ones, like PATH
            seen.add(env_id)
            found.append((env_id, name, Path(source.path(env_id))))
    return found


def resolve_env(ref: str | Path, extra: list[Path] | None = None) -> Path:
    """The bundle folder for ``ref``: a folder path, or an id looked up in every source."""
    as_path = Path(ref)
    if isinstance(ref, Path) or os.sep in str(ref) or str(ref).startswith("."):
        if is_bundle_dir(as_path):
            return as_path
    elif is_bundle_dir(as_path) and not str(ref).isidentifier():
        return as_path
    sources = all_sources(extra)
    for source in sources.values():
        try:
            return Path(source.path(str(ref)))
        except KeyError:
            continue
    if is_bundle_dir(as_path):  # a bare folder name in the working directory
        return as_path
    known = sorted({i for s in sources.values() for i in s.list_ids()})
    if as_path.exists() and not is_bundle_dir(as_path):
        raise EnvironmentNotFoundError(f"{ref} (a folder without manifest.json)", known)
    raise EnvironmentNotFoundError(str(ref), known)
