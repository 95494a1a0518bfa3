"""Run schema.sql / seed.sql statement by statement so a failure names its statement and line."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

# Seed data must not drift with the wall clock (a defect of the official data set).
_CLOCK_RE = re.compile(
    r"\b(?:date|time|datetime|julianday|strftime|unixepoch)\s*\(\s*(?:'[^']*'\s*,\s*)?'now'"
    r"|\bCURRENT_(?:TIMESTAMP|DATE|TIME)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Statement:
    """One complete SQL statement and the line it starts on (1-based)."""

    sql: str
    line: int
    index: int


def split_statements(script: str) -> Iterator[Statement]:
    """Split a script into complete statements using SQLite's own completeness test."""
    buf: list[str] = []
    start_line = 1
    index = 0
    for lineno, line in enumerate(script.splitlines(keepends=True), start=1):
        if not buf:
            if not line.strip() or line.lstrip().startswith("--"):
                continue
            start_line = lineno
        buf.append(line)
        text = "".join(buf)
        if sqlite3.complete_statement(text):
            index += 1
            yield Statement(text.strip(), start_line, index)
            buf = []
    rest = "".join(buf).strip()
    if rest:
        index += 1
        yield Statement(rest, start_line, index)


def run_script(
    conn: sqlite3.Connection, script: str, *, max_errors: int = 20
) -> list[tuple[Statement, str]]:
    """Execute every statement; return ``(statement, error)`` pairs (at most ``max_errors``)."""
    errors: list[tuple[Statement, str]] = []
    for stmt in split_statements(script):
        try:
            conn.execute(stmt.sql)
        except sqlite3.Error as exc:
            errors.append((stmt, str(exc)))
            if len(errors) >= max_errors:
                break
    return errors


def clock_reads(script: str) -> list[tuple[Statement, str]]:
    """Statements that read the wall clock (``datetime('now')``, ``CURRENT_TIMESTAMP``)."""
    found = []
    for stmt in split_statements(script):
        match = _CLOCK_RE.search(stmt.sql)
        if match:
            found.append((stmt, match.group(0)))
    return found
