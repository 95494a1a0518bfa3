"""Benchmark: diff a 2,000-row database with 50 changed rows; prints one JSON document.

The database has five tables of 400 rows (integer, composite and rowid keys);
the change set is 20 updates, 20 inserts and 10 deletes spread over the tables.
Run: ``uv run python packages/awm-verify/benchmarks/bench_diff.py``.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time

from awm_core.dbdiff import diff_images

ROWS_PER_TABLE = 400


def build() -> tuple[bytes, bytes]:
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, created_at TEXT);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id),
                             status TEXT, total REAL, note TEXT);
        CREATE TABLE items (order_id INTEGER, line INTEGER, sku TEXT, qty INTEGER,
                            PRIMARY KEY (order_id, line)) WITHOUT ROWID;
        CREATE TABLE events (kind TEXT, payload TEXT, at TEXT);
        CREATE TABLE products (sku TEXT PRIMARY KEY, title TEXT, price REAL, stock INTEGER);
        """
    )
    n = ROWS_PER_TABLE
    conn.executemany(
        "INSERT INTO users VALUES (?,?,?,?)",
        [
            (i, f"user {i}", f"u{i}@example.org", f"2025-01-{i % 28 + 1:02d}")
            for i in range(1, n + 1)
        ],
    )
    conn.executemany(
        "INSERT INTO orders VALUES (?,?,?,?,?)",
        [(i, i % 50 + 1, "pending", i * 1.5, "x" * 40) for i in range(1, n + 1)],
    )
    conn.executemany(
        "INSERT INTO items VALUES (?,?,?,?)",
        [(i // 4 + 1, i % 4, f"sku-{i % 97}", i % 5 + 1) for i in range(n)],
    )
    conn.executemany(
        "INSERT INTO events VALUES (?,?,?)",
        [("login", json.dumps({"user": i}), f"2025-02-01T00:{i % 60:02d}") for i in range(n)],
    )
    conn.executemany(
        "INSERT INTO products VALUES (?,?,?,?)",
        [(f"sku-{i}", f"product {i}", 9.99 + i, 100) for i in range(n)],
    )
    conn.commit()
    before = conn.serialize()
    # 50 changes: 20 updates, 20 inserts, 10 deletes
    conn.executescript(
        """
        UPDATE orders SET status = 'shipped' WHERE id IN (3, 14, 15, 92, 65);
        UPDATE users SET email = 'new@example.org' WHERE id IN (7, 8, 9, 10, 11);
        UPDATE products SET stock = stock - 1 WHERE sku IN ('sku-1','sku-2','sku-3','sku-4','sku-5');
        UPDATE items SET qty = 9 WHERE order_id IN (10, 11) AND line IN (0, 1, 2) AND order_id * 4 + line < 46;
        DELETE FROM events WHERE rowid IN (5, 6, 7, 8, 9);
        DELETE FROM orders WHERE id IN (300, 301, 302, 303, 304);
        """
    )
    conn.executemany(
        "INSERT INTO orders VALUES (?,?,?,?,?)",
        [(n + i, 1, "pending", 1.0, "") for i in range(1, 11)],
    )
    conn.executemany("INSERT INTO events VALUES (?,?,?)", [("logout", "{}", "t")] * 10)
    conn.commit()
    return before, conn.serialize()


def main() -> None:
    before, after = build()
    d = diff_images(before, after)
    counts = d.counts()
    for _ in range(20):  # warm-up
        diff_images(before, after)
    samples = []
    for _ in range(300):
        t0 = time.perf_counter()
        diff_images(before, after)
        samples.append(time.perf_counter() - t0)
    samples.sort()
    render_samples = []
    for _ in range(100):
        t0 = time.perf_counter()
        d.render()
        render_samples.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "benchmark": "diff_images",
                "rows": 5 * ROWS_PER_TABLE,
                "image_bytes": [len(before), len(after)],
                "changed_rows": counts.inserted + counts.deleted + counts.updated,
                "counts": counts.model_dump(),
                "median_ms": round(statistics.median(samples) * 1e3, 3),
                "p99_ms": round(samples[int(len(samples) * 0.99) - 1] * 1e3, 3),
                "render_median_ms": round(statistics.median(render_samples) * 1e3, 3),
                "target_median_ms": 5.0,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
