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
_holds: dict[str, int] = {}  # cached imports of each name not yet forgotten


def content_name(prefix: str, source: str | bytes, label: str = "", digits: int = 16) -> str:
    """``{prefix}_{label}_{sha256 prefix}``: a valid, content-unique module name."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    digest = hashlib.sha256(data).hexdigest()[:digits]
    safe = re.sub(r"[^A-Za-z0-9_]", "_", label)
    return f"{prefix}_{safe}_{digest}" if safe else f"{prefix}_{digest}"


def import_file(path: Path, name: str, *, cache: bool = True) -> ModuleType:
    """Execute ``path`` as module ``name`` (in ``sys.modules`` while it runs, for dataclasses).

    With ``cache`` the module is imported once per process per name, and each call
    is one hold on it that :func:`forget` releases; without it, every call executes
    the file afresh. Whatever the code raises at import
    (even ``SystemExit``) propagates, and the half-built module is removed.
    """
    with _lock:
        if cache and name in _cache:
            _holds[name] = _holds.get(name, 0) + 1
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
            _holds[name] = 1
        return module


def forget(name: str) -> None:
    """Drop module ``name`` from this process (its cache entry and ``sys.modules``).

    Why: a process that loads hundreds of generated bundles one after another (``awm
    envs validate`` over an AWM-1K release) would otherwise keep every one of them, about
    2 to 3 MiB each, until it exits. Code still holding the module keeps it alive.

    Names are content digests, so two bundles with the same ``app.py`` share one module:
    forgetting releases one :func:`import_file` hold, and the module leaves only with the
    last one (a validation run over a copy of a bundle that a live environment of this
    process also loaded must not pull the module out from under that environment).
    """
    with _lock:
        left = _holds.get(name, 0) - 1
        if left > 0:
            _holds[name] = left
            return
        _holds.pop(name, None)
        _cache.pop(name, None)
        sys.modules.pop(name, None)
