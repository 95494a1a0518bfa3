"""Files shipped with the catalog so read-only commands need no FastAPI: tool specs and proof.

``python -m awm_envs.cli.catalog_files`` (after editing a catalog bundle):

* writes each bundle's ``tools.json`` from its app's routes, so ``awm envs
  show`` and ``awm envs serve`` read the tool specs from the file instead of
  importing ``app.py`` (tests check the file still matches the routes);
* validates the catalog and writes ``catalog/validation.json``: per bundle its
  content hash and how many tasks were proven, so a fresh install shows
  "proven" in ``awm envs list`` (a record whose hash no longer matches the
  bundle's files is ignored).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from awm_envs.bundle import identity
from awm_envs.validation.record import shipped_validation_path


def write_tool_files() -> list[Path]:
    """Write ``tools.json`` for every catalog bundle from its routes; returns the files written."""
    from awm_envs.bundle.loader import import_app
    from awm_envs.bundle.sources import CATALOG_DIR
    from awm_envs.bundle.toolspecs import derive_tool_specs
    from awm_envs.validation.validate import catalog_env_ids

    written = []
    for env_id in catalog_env_ids():
        root = CATALOG_DIR / env_id
        app = import_app(root, env_id).app
        specs = [t.model_dump(mode="json") for t in derive_tool_specs(app)]
        target = root / "tools.json"
        target.write_text(json.dumps(specs, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(target)
    return written


def write_shipped_validation() -> dict[str, Any]:
    """Validate the whole catalog and write ``catalog/validation.json``; fails if a task fails."""
    from awm_envs.validation.validate import validate_catalog

    records: dict[str, Any] = {}
    for result in validate_catalog():
        if not result.passed:
            raise SystemExit(f"{result.env_id} does not validate: fix it before shipping")
        records[result.env_id] = {
            "env_id": result.env_id,
            "digest": identity.digest(Path(result.path)),
            "proven": sum(t.proven for t in result.tasks),
            "tasks": len(result.tasks),
            "passed": result.passed,
            "validated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    shipped_validation_path().write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    return records


if __name__ == "__main__":  # pragma: no cover - a maintainer's tool
    for f in write_tool_files():
        print(f"wrote {f}", file=sys.stderr)
    shipped = write_shipped_validation()
    print(f"wrote {shipped_validation_path()} ({len(shipped)} environments)", file=sys.stderr)
