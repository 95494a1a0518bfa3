"""Where awm keeps what it can rebuild: one cache folder for every package.

``$AWM_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/awm``, else ``~/.cache/awm``.
Validation records, pulled bundles and converted local models each take a
sub-folder of it, so one variable moves (or isolates, in tests) all of them.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV_VAR = "AWM_CACHE_DIR"


def cache_dir() -> Path:
    """awm's cache folder (read from the environment on each call, so tests can move it)."""
    root = os.environ.get(CACHE_DIR_ENV_VAR)
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "awm"
