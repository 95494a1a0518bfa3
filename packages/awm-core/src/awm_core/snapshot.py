"""Database images: the bytes of a whole SQLite database, taken from a file or a connection.

Every comparison in awm-verify works on images rather than live files: an image is
immutable, cheap to ship to a sandbox worker, and reopens in microseconds with
``Connection.deserialize``. Reading a file through SQLite (not ``read_bytes``) means
a database in WAL mode is captured with its committed-but-not-checkpointed pages.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from awm_core.errors import AWMError

DatabaseSource = bytes | bytearray | memoryview | str | os.PathLike[str] | sqlite3.Connection

SQLITE_MAGIC = b"SQLite format 3\x00"


class SnapshotError(AWMError):
    """A database image could not be read: the path is missing or the bytes are not SQLite."""


def snapshot(conn: sqlite3.Connection, *, schema: str = "main") -> bytes:
    """Return the image of one schema of an open connection (``serialize``)."""
    return conn.serialize(name=schema)


def load_image(source: DatabaseSource) -> bytes:
    """Return the image of ``source``: raw bytes, a path to a database file, or a connection.

    Raises :class:`SnapshotError` when a path does not exist or bytes are not a
    SQLite database, so callers never hand garbage to a verifier.
    """
    if isinstance(source, sqlite3.Connection):
        return snapshot(source)
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if data and not data.startswith(SQLITE_MAGIC):
            raise SnapshotError(
                "these bytes are not a SQLite database image (bad header); "
                "pass Connection.serialize() output or a database file path"
            )
        return data
    path = Path(source)
    if not path.is_file():
        raise SnapshotError(f"database file {path} does not exist")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            return conn.serialize()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"{path} is not a readable SQLite database: {exc}") from exc


def open_image(image: bytes, *, readonly: bool = True) -> sqlite3.Connection:
    """Open an image as a private in-memory connection (``query_only`` unless asked otherwise)."""
    conn = sqlite3.connect(":memory:")
    if image:
        conn.deserialize(image)
    if readonly:
        conn.execute("PRAGMA query_only = ON")
    return conn
