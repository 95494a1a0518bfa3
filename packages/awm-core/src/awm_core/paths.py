"""Where awm keeps what it can rebuild: one cache folder for every package.

``$AWM_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/awm``, else ``~/.cache/awm``.
Validation records, pulled bundles and converted local models each take a
sub-folder of it, so one variable moves (or isolates, in tests) all of them.
What only lives as long as one process (imported sources, scorer scratch) goes
in :func:`process_scratch` instead, which leaves nothing behind at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

CACHE_DIR_ENV_VAR = "AWM_CACHE_DIR"


def cache_dir() -> Path:
    """awm's cache folder (read from the environment on each call, so tests can move it)."""
    root = os.environ.get(CACHE_DIR_ENV_VAR)
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "awm"


_scratch: dict[tuple[int, str], Path] = {}
_scratch_lock = threading.Lock()


def process_scratch(prefix: str) -> Path:
    """A private temporary folder for this process, made on first use and removed at exit.

    Why: a folder made at import time, or per object without a close, is left in
    ``/tmp`` by every process that touches it (each Ray actor, each test worker,
    each training step's subprocess), which over a long run fills the disk with
    empty folders. One folder per ``prefix`` and process (a forked child gets its
    own), mode 0700.
    """
    key = (os.getpid(), prefix)
    with _scratch_lock:
        folder = _scratch.get(key)
        if folder is None or not folder.is_dir():
            folder = _scratch[key] = Path(tempfile.mkdtemp(prefix=prefix))
            atexit.register(_remove_scratch, folder, os.getpid())
        return folder


def _remove_scratch(folder: Path, owner: int) -> None:
    if os.getpid() == owner:  # a forked child runs its parent's handlers: not its folder
        shutil.rmtree(folder, ignore_errors=True)
