"""A simple per-table row diff between two database images (what a call changed)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TableDiff:
    """Rows added, removed and changed in one table, keyed by primary key (or rowid)."""

    table: str
    added: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)  # {"key", "before", "after"}

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
        }


def _open(image: bytes) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    return conn


def _rows(conn: sqlite3.Connection, table: str) -> tuple[list[str], dict[Any, dict[str, Any]]]:
    info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    cols = [c[1] for c in info]
    pk = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
    try:
        cur = conn.execute(f'SELECT rowid, * FROM "{table}"')
        with_rowid = True
    except sqlite3.OperationalError:  # WITHOUT ROWID tables
        cur = conn.execute(f'SELECT * FROM "{table}"')
        with_rowid = False
    out: dict[Any, dict[str, Any]] = {}
    for raw in cur:
        values = raw[1:] if with_rowid else raw
        row = dict(zip(cols, values, strict=False))
        key = tuple(row[k] for k in pk) if pk else (raw[0] if with_rowid else tuple(values))
        out[key] = row
    return cols, out


def diff_images(before: bytes, after: bytes) -> list[TableDiff]:
    """Tables whose rows differ between two images (``Instance.snapshot()`` bytes)."""
    a, b = _open(before), _open(after)
    try:
        query = "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        tables = sorted({r[0] for r in a.execute(query)} | {r[0] for r in b.execute(query)})
        diffs = []
        for table in tables:
            try:
                _, rows_a = _rows(a, table)
            except sqlite3.OperationalError:
                rows_a = {}
            try:
                _, rows_b = _rows(b, table)
            except sqlite3.OperationalError:
                rows_b = {}
            d = TableDiff(table)
            for key, row in rows_b.items():
                if key not in rows_a:
                    d.added.append(row)
                elif rows_a[key] != row:
                    d.changed.append({"key": key, "before": rows_a[key], "after": row})
            d.removed = [row for key, row in rows_a.items() if key not in rows_b]
            if d:
                diffs.append(d)
        return diffs
    finally:
        a.close()
        b.close()
