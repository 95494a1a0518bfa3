"""Shared fixtures: real SQLite images and one real sandbox pool per test session."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from awm_verify.sandbox import SandboxLimits, VerifierPool



def make_image(script: str) -> bytes:
    """A database image built by running ``script`` on an empty in-memory database."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    conn.commit()
    image = conn.serialize()
    conn.close()
    return image


@pytest.fixture(scope="session")
def pool() -> Iterator[VerifierPool]:
    """Two warm workers with tight limits, so hostile tests finish fast."""
    limits = SandboxLimits(cpu_s=1.0, wall_s=3.0, memory_bytes=256 * 1024 * 1024)
    with VerifierPool(size=2, limits=limits) as p:
        p.start()
        yield p


@pytest.fixture(scope="session")
def orders_images() -> tuple[bytes, bytes]:
    """A before/after pair: order 2 cancelled, nothing else changed."""
    schema = """
    CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, status TEXT, total REAL);
    INSERT INTO orders VALUES (1, 1, 'shipped', 20.0), (2, 1, 'pending', 35.5), (3, 2, 'pending', 9.0);
    """
    before = make_image(schema)
    after = make_image(schema + "UPDATE orders SET status = 'cancelled' WHERE id = 2;")
    return before, after
