"""Import generated code from a file under a private module name.

Bundles' ``app.py`` and ``verifiers.py`` and synthesis drafts are not packages:
each is imported under a name derived from its content, so an edited file gets
a fresh module while code still holding the old one keeps working, and two
bundles' ``app.py`` never collide in ``sys.modules``. One implementation for the
environment runtime, validation and synthesis.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["content_name", "forget", "import_file"]

_lock = threading.Lock()
_cache: dict[str, ModuleType] = {}


def content_name(prefix: str, source: str | bytes, label: str = "", digits: int = 16) -> str:
    """``{prefix}_{label}_{sha256 prefix}``: a valid, content-unique module name."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    digest = hashlib.sha256(data).hexdigest()[:digits]
    safe = re.sub(r"[^A-Za-z0-9_]", "_", label)
    return f"{prefix}_{safe}_{digest}" if safe else f"{prefix}_{digest}"


def import_file(path: Path, name: str, *, cache: bool = True) -> ModuleType:
    """Execute ``path`` as module ``name`` (in ``sys.modules`` while it runs, for dataclasses).

    With ``cache`` the module is imported once per process per name; without it,
    every call executes the file afresh. Whatever the code raises at import
    (even ``SystemExit``) propagates, and the half-built module is removed.
    """
    with _lock:
        if cache and name in _cache:
            return _cache[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:  # pragma: no cover - only for odd file systems
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        if cache:
            _cache[name] = module
        return module


def forget(name: str) -> None:
    """Drop module ``name`` from this process (its cache entry and ``sys.modules``).

    Why: a process that loads hundreds of generated bundles one after another (``awm
    envs validate`` over an AWM-1K release) would otherwise keep every one of them, about
    2 to 3 MiB each, until it exits. Code still holding the module keeps it alive.
    """
    with _lock:
        _cache.pop(name, None)
        sys.modules.pop(name, None)
