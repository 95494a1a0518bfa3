"""Freeze the clock in generated SQL: ``datetime('now', '-3 days')`` becomes a literal.

Seed data that reads the wall clock makes an environment's initial state drift
from day to day (a defect of the official data set), so every clock read in
schema defaults or INSERTs is evaluated once, by SQLite itself, against the
run's fixed reference time and replaced by the literal it yields. The
environment then reports that same reference time as its "now".
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime

from awm_envs.bundle.parens import matching_paren

_CALL_START = re.compile(r"\b(date|time|datetime|julianday|strftime|unixepoch)\s*\(", re.IGNORECASE)
_CURRENT = re.compile(r"\bCURRENT_(TIMESTAMP|DATE|TIME)\b", re.IGNORECASE)
_NOW_ARG = re.compile(r"'now'", re.IGNORECASE)
_CURRENT_FORMAT = {"TIMESTAMP": "%Y-%m-%d %H:%M:%S", "DATE": "%Y-%m-%d", "TIME": "%H:%M:%S"}


@dataclass(frozen=True)
class FreezeResult:
    """The rewritten SQL and each rewrite made (``original -> literal``)."""

    sql: str
    rewrites: list[tuple[str, str]]


def _inside_string(text: str, index: int) -> bool:
    """Whether ``index`` falls inside a single-quoted SQL string literal."""
    quote = False
    i = 0
    while i < index:
        if text[i] == "'":
            if quote and i + 1 < len(text) and text[i + 1] == "'":
                i += 2
                continue
            quote = not quote
        i += 1
    return quote


def _sql_literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def freeze_now(sql: str, reference_time: datetime) -> FreezeResult:
    """Replace every clock read in ``sql`` with its value at ``reference_time``."""
    ref = reference_time.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S")
    conn = sqlite3.connect(":memory:")
    rewrites: list[tuple[str, str]] = []
    try:
        out: list[str] = []
        pos = 0
        while True:
            match = _CALL_START.search(sql, pos)
            if match is None:
                break
            open_index = match.end() - 1
            close = matching_paren(sql, open_index)
            call = sql[match.start() : close + 1] if close != -1 else ""
            if close == -1 or not _NOW_ARG.search(call) or _inside_string(sql, match.start()):
                out.append(sql[pos : match.end()])
                pos = match.end()
                continue
            frozen_call = _NOW_ARG.sub(f"'{ref}'", call)
            try:
                value = conn.execute(f"SELECT {frozen_call}").fetchone()[0]
            except sqlite3.Error:
                out.append(
                    sql[pos : match.end()]
                )  # not evaluable: leave it for the checks to report
                pos = match.end()
                continue
            literal = _sql_literal(value)
            rewrites.append((call, literal))
            out.append(sql[pos : match.start()])
            out.append(literal)
            pos = close + 1
        out.append(sql[pos:])
        text = "".join(out)
    finally:
        conn.close()

    def _current(m: re.Match[str]) -> str:
        if _inside_string(text, m.start()):
            return m.group(0)
        literal = _sql_literal(reference_time.strftime(_CURRENT_FORMAT[m.group(1).upper()]))
        rewrites.append((m.group(0), literal))
        return literal

    text = _CURRENT.sub(_current, text)
    return FreezeResult(text, rewrites)
