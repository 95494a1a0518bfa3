"""Execute generated DDL and INSERTs statement by statement, naming every failure.

The schema and data stages are checked by running their SQL in a private
in-memory SQLite database with foreign keys enforced, exactly as the awm
runtime will; a failing table or row is reported with its statement and
SQLite's message so the model can repair it.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from awm_envs import split_statements

_CREATE_TABLE = re.compile(
    r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)", re.IGNORECASE
)
_CREATE_INDEX = re.compile(r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX", re.IGNORECASE)
_INSERT_TABLE = re.compile(r"^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+[\"`\[]?(\w+)", re.IGNORECASE)


def statements(script: str) -> list[str]:
    """Split a script into complete statements (SQLite's own completeness test)."""
    return [s.sql for s in split_statements(script)]


def table_of_create(sql: str) -> str | None:
    match = _CREATE_TABLE.match(sql)
    return match.group(1) if match else None


def table_of_insert(sql: str) -> str | None:
    match = _INSERT_TABLE.match(sql)
    return match.group(1) if match else None


def is_create_index(sql: str) -> bool:
    return bool(_CREATE_INDEX.match(sql))


def short(sql: str, limit: int = 160) -> str:
    flat = " ".join(sql.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def new_database() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


@dataclass
class ScriptRun:
    """Which statements of a script ran and which failed (with SQLite's message)."""

    ok: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def run_statements(conn: sqlite3.Connection, sqls: list[str]) -> ScriptRun:
    """Execute each statement on its own so one failure does not hide the others."""
    run = ScriptRun()
    for sql in sqls:
        try:
            conn.execute(sql)
        except sqlite3.Error as exc:
            run.failed.append((sql, str(exc)))
        else:
            run.ok.append(sql)
    conn.commit()
    return run


def foreign_key_problems(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    rows = conn.execute("PRAGMA foreign_key_check").fetchall()[:limit]
    return [
        f"{table} rowid {rowid}: foreign key to {parent} has no matching row"
        for table, rowid, parent, _ in rows
    ]


def build_template(schema_sql: str, seed_sql: str) -> bytes:
    """The initial database image (schema + seed) as bytes, for instances and verifiers."""
    conn = new_database()
    try:
        conn.executescript(schema_sql)
        conn.executescript(seed_sql)
        conn.commit()
        return conn.serialize()
    finally:
        conn.close()


def table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    return {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}
