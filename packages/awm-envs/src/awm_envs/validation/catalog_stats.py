"""Counts that describe a bundle: tables, seed rows, tools and tasks per complexity bucket.

Read straight from the bundle's files (no app import for the counts that do not
need it), so ``awm envs list`` can show them cheaply.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from pydantic import BaseModel, Field

from awm_core.models import Complexity
from awm_envs.validation.validate import CATALOG_DIR, catalog_env_ids, resolve_env_dir

__all__ = ["CatalogStats", "catalog_stats", "catalog_table"]

_TOOL_RE = re.compile(r"operation_id\s*=\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")


class CatalogStats(BaseModel):
    """Size of one environment bundle."""

    env_id: str
    tables: int
    tables_with_foreign_keys: int
    indexes: int
    rows: int
    tools: int
    tasks: int
    tasks_per_bucket: dict[str, int] = Field(default_factory=dict)
    refusal_tasks: int = 0


def _database(env_dir: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript((env_dir / "schema.sql").read_text(encoding="utf-8"))
    conn.executescript((env_dir / "seed.sql").read_text(encoding="utf-8"))
    return conn


def catalog_stats(env: str | Path) -> CatalogStats:
    """Counts for a catalog id or a bundle folder."""
    env_dir = resolve_env_dir(env)
    manifest = json.loads((env_dir / "manifest.json").read_text(encoding="utf-8"))
    conn = _database(env_dir)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        with_fk = sum(
            1 for t in tables if conn.execute(f'PRAGMA foreign_key_list("{t}")').fetchall()
        )
        indexes = conn.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        ).fetchone()[0]
        rows = sum(conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    finally:
        conn.close()
    tools_json = env_dir / "tools.json"
    if tools_json.is_file():
        tools = len(json.loads(tools_json.read_text(encoding="utf-8")))
    else:
        tools = len(set(_TOOL_RE.findall((env_dir / "app.py").read_text(encoding="utf-8"))))
    tasks_path = env_dir / "tasks.json"
    tasks = json.loads(tasks_path.read_text(encoding="utf-8")) if tasks_path.is_file() else []
    buckets = {c.value: 0 for c in Complexity}
    for t in tasks:
        buckets[t["complexity"]] = buckets.get(t["complexity"], 0) + 1
    return CatalogStats(
        env_id=manifest["id"],
        tables=len(tables),
        tables_with_foreign_keys=with_fk,
        indexes=indexes,
        rows=rows,
        tools=tools,
        tasks=len(tasks),
        tasks_per_bucket=buckets,
        refusal_tasks=sum(1 for t in tasks if t.get("expects_refusal")),
    )


def catalog_table(catalog: Path = CATALOG_DIR) -> list[CatalogStats]:
    """Stats of every environment in the catalog, by id."""
    return [catalog_stats(catalog / env_id) for env_id in catalog_env_ids(catalog)]
