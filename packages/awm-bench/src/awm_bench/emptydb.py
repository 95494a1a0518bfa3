"""Rolling a benchmark episode out with awm's ``rollout_episode`` when its state is not
a database (a benchmark's own classes hold it): the database image is an empty one,
so rollouts diff two of these and find nothing and the judge decides; the "pool" hands
out the one session the benchmark opened."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from typing import Generic, TypeVar

S = TypeVar("S")


@cache
def empty_database() -> bytes:
    """A serialized SQLite database with one empty table (an empty file cannot be serialized)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE benchmark_state (note TEXT)")
        return conn.serialize()
    finally:
        conn.close()


@dataclass
class OneSessionPool(Generic[S]):
    """A pool whose only instance is the session a benchmark already opened."""

    session: S

    @asynccontextmanager
    async def instance(self) -> AsyncIterator[S]:
        yield self.session


@dataclass(frozen=True)
class NoDatabaseEnvironment:
    """The environment ``rollout_episode`` records: an id and the empty database image."""

    id: str

    @property
    def template(self) -> bytes:
        return empty_database()
