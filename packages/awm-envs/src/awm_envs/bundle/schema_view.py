"""``awm envs show ENV --schema``: tables, columns, keys and indexes, read from the template image."""

from __future__ import annotations

import sqlite3
from typing import Any

from rich.console import Console
from rich.tree import Tree


def describe_schema(image: bytes) -> dict[str, Any]:
    """``{table: {columns, primary_key, foreign_keys, indexes, rows}}`` from a database image."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(image)
    try:
        out: dict[str, Any] = {}
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        for t in tables:
            cols = conn.execute(f'PRAGMA table_info("{t}")').fetchall()
            fks = conn.execute(f'PRAGMA foreign_key_list("{t}")').fetchall()
            idx = conn.execute(f'PRAGMA index_list("{t}")').fetchall()
            out[t] = {
                "columns": [
                    {"name": c[1], "type": c[2], "not_null": bool(c[3]), "primary_key": bool(c[5])}
                    for c in cols
                ],
                "primary_key": [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5]],
                "foreign_keys": [
                    {"column": f[3], "references": f"{f[2]}.{f[4] or 'rowid'}"} for f in fks
                ],
                "indexes": [
                    {
                        "name": i[1],
                        "unique": bool(i[2]),
                        "columns": [r[2] for r in conn.execute(f'PRAGMA index_info("{i[1]}")')],
                    }
                    for i in idx
                ],
                "rows": conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0],
            }
        return out
    finally:
        conn.close()


def render_schema(env_id: str, schema: dict[str, Any], console: Console | None = None) -> None:
    """A tree: one node per table, its columns marked PK / FK -> target, then its indexes."""
    tree = Tree(f"[bold]{env_id}[/bold] ({len(schema)} tables)")
    for table, info in schema.items():
        node = tree.add(f"[bold cyan]{table}[/bold cyan] ({info['rows']} rows)")
        fk_by_col = {f["column"]: f["references"] for f in info["foreign_keys"]}
        for col in info["columns"]:
            marks = []
            if col["primary_key"]:
                marks.append("[yellow]PK[/yellow]")
            if col["name"] in fk_by_col:
                marks.append(f"[magenta]FK → {fk_by_col[col['name']]}[/magenta]")
            null = "" if col["not_null"] or col["primary_key"] else " null"
            node.add(
                f"{col['name']} [dim]{col['type'] or 'ANY'}{null}[/dim] {' '.join(marks)}".rstrip()
            )
        for ix in info["indexes"]:
            if ix["name"].startswith("sqlite_autoindex"):
                continue
            kind = "unique index" if ix["unique"] else "index"
            node.add(f"[dim]{kind} {ix['name']} ({', '.join(ix['columns'])})[/dim]")
    (console or Console()).print(tree)
