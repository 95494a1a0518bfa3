"""The seeded database of one environment, with its tools and tasks: what evidence is drawn from."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_bench.quality.entities import singular
from awm_core.models import Task, ToolSpec


@dataclass
class TableInfo:
    """A table of the seeded database: its DDL, size and text columns."""

    name: str
    sql: str
    rows: int
    columns: list[str]
    text_columns: list[str]


class EnvData:
    """What the evidence is drawn from: the tools, tasks and seeded database of one environment."""

    def __init__(
        self,
        env_id: str,
        path: Path,
        tools: Sequence[ToolSpec],
        tasks: Sequence[Task],
        template: bytes,
        proof: dict[str, Any] | None = None,
    ) -> None:
        self.env_id = env_id
        self.path = path
        self.tools = list(tools)
        self.tool_names = {t.name for t in self.tools}
        self.tasks = list(tasks)
        self.proof = proof
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.deserialize(template)
        self.tables: dict[str, TableInfo] = {}
        for name, sql in self.db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        ):
            cols = list(self.db.execute(f'PRAGMA table_info("{name}")'))
            rows = self.db.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
            text = [
                c[1] for c in cols if not c[2] or "CHAR" in c[2].upper() or "TEXT" in c[2].upper()
            ]
            self.tables[name] = TableInfo(name, sql or "", rows, [c[1] for c in cols], text)

    @classmethod
    def load(cls, env: Any) -> EnvData:
        """From an :class:`awm_envs.Environment` (its bundle is loaded in this process)."""
        from awm_envs import validation_record

        return cls(
            env.id,
            Path(env.path),
            env.tools,
            env.tasks,
            env.template,
            validation_record(env.id, Path(env.path)),
        )

    def close(self) -> None:
        """Release the in-memory copy of the database."""
        self.db.close()

    def find(self, literal: str, *, limit: int = 3) -> list[tuple[str, int, list[dict[str, Any]]]]:
        """Tables whose text columns hold every word of ``literal``: (table, count, sample rows)."""
        words = [singular(w) for w in re.findall(r"[\w@.\-]+", literal) if len(w) >= 2]
        if not words:
            return []
        hits = []
        for table in self.tables.values():
            if not table.text_columns:
                continue
            blob = " || ' ' || ".join(
                f"COALESCE(CAST(\"{c}\" AS TEXT), '')" for c in table.text_columns
            )
            where = " AND ".join(f"({blob}) LIKE ?" for _ in words)
            params = [f"%{w}%" for w in words]
            count = self.db.execute(
                f'SELECT COUNT(*) FROM "{table.name}" WHERE {where}', params
            ).fetchone()[0]
            if count:
                cur = self.db.execute(
                    f'SELECT * FROM "{table.name}" WHERE {where} LIMIT {limit}', params
                )
                hits.append((table.name, count, _rows(cur)))
        return hits

    def sample(self, table: str, limit: int = 3) -> list[dict[str, Any]]:
        """The first ``limit`` rows of ``table``."""
        return _rows(self.db.execute(f'SELECT * FROM "{table}" LIMIT {limit}'))


def _rows(cur: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur]
