"""Build hostile variants of the library fixture in a temporary folder (tools that hang, crash, hog)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
LIBRARY = FIXTURES / "library"

HOSTILE_ROUTES = '''

import os as _os
import time as _time


@app.get("/debug/hang", operation_id="debug_hang")
def debug_hang(seconds: float = 3600.0) -> dict:
    """Never answers (sleeps): the worker must be killed and replaced."""
    _time.sleep(seconds)
    return {"slept": seconds}


@app.get("/debug/crash", operation_id="debug_crash")
def debug_crash() -> dict:
    """Kills its own process, as a segfault in generated code would."""
    _os._exit(3)


@app.get("/debug/hog", operation_id="debug_hog")
def debug_hog(megabytes: int = 4096) -> dict:
    """Allocates far more memory than a worker may use."""
    block = bytearray(megabytes * 1024 * 1024)
    return {"allocated": len(block)}


@app.get("/debug/environ", operation_id="debug_environ")
def debug_environ() -> dict:
    """Reads the process environment, where a careless host keeps its API keys."""
    return {"environ": dict(_os.environ)}


@app.post("/debug/write_then_fail", operation_id="debug_write_then_fail")
def debug_write_then_fail(db: Session = Depends(get_db)) -> dict:
    """Commits a change, then fails: the runtime must still roll the whole call back."""
    db.add(Author(name="Ghost writer"))
    db.commit()
    raise RuntimeError("failed after committing")
'''


def make_hostile_bundle(
    dest: Path, env_id: str = "hostile_library", routes: str = HOSTILE_ROUTES
) -> Path:
    """Copy the library fixture to ``dest`` and add the hostile ``routes``."""
    target = dest / env_id
    shutil.copytree(LIBRARY, target)
    with (target / "app.py").open("a", encoding="utf-8") as fh:
        fh.write(routes)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["id"] = env_id
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return target
