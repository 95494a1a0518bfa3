"""The database image of an environment whose state is not a database (a benchmark's own
classes hold it): rollouts diff two of these and find nothing, the judge decides."""

from __future__ import annotations

import sqlite3
from functools import cache


@cache
def empty_database() -> bytes:
    """A serialized SQLite database with one empty table (an empty file cannot be serialized)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE benchmark_state (note TEXT)")
        return conn.serialize()
    finally:
        conn.close()
