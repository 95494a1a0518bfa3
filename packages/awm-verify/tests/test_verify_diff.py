"""The state diff: rows keyed by primary key (rowid fallback), schema changes, bounded rendering."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from awm_core.dbdiff import RenderLimits, diff_databases, diff_images
from awm_core.snapshot import SnapshotError, load_image


def make_image(script: str) -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.executescript(script)
    image = conn.serialize()
    conn.close()
    return image


BASE = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT);
INSERT INTO users VALUES (1, 'ann', 'a@x'), (2, 'bob', 'b@x'), (3, 'cy', 'c@x');
"""


def test_identical_databases_have_an_empty_diff():
    image = make_image(BASE)
    d = diff_images(image, image)
    assert d.is_empty
    assert d.render().startswith("No database changes")


def test_identical_content_written_separately_has_an_empty_diff():
    assert diff_images(make_image(BASE), make_image(BASE)).is_empty


def test_inserted_row_is_keyed_by_primary_key():
    d = diff_images(
        make_image(BASE), make_image(BASE + "INSERT INTO users VALUES (4, 'dee', NULL);")
    )
    t = d.table("users")
    assert t is not None and t.key == ["id"] and t.key_kind == "primary_key"
    assert t.inserted == [{"id": 4, "name": "dee", "email": None}]
    assert not t.deleted and not t.updated


def test_deleted_row_is_reported_with_its_values():
    d = diff_images(make_image(BASE), make_image(BASE + "DELETE FROM users WHERE id = 2;"))
    assert d.table("users").deleted == [{"id": 2, "name": "bob", "email": "b@x"}]  # type: ignore[union-attr]


def test_updated_row_lists_only_changed_columns_with_old_and_new():
    d = diff_images(
        make_image(BASE), make_image(BASE + "UPDATE users SET email = NULL WHERE id = 3;")
    )
    (upd,) = d.table("users").updated  # type: ignore[union-attr]
    assert upd.key == {"id": 3}
    assert {c: (v.old, v.new) for c, v in upd.changes.items()} == {"email": ("c@x", None)}


def test_composite_key_without_rowid_table():
    schema = """
    CREATE TABLE stock (store TEXT, sku TEXT, qty INTEGER, PRIMARY KEY (store, sku)) WITHOUT ROWID;
    INSERT INTO stock VALUES ('north', 'a', 1), ('north', 'b', 2), ('south', 'a', 3);
    """
    after = (
        schema
        + "UPDATE stock SET qty = 9 WHERE store = 'south'; INSERT INTO stock VALUES ('south', 'b', 1);"
    )
    t = diff_images(make_image(schema), make_image(after)).table("stock")
    assert t is not None and t.key == ["store", "sku"]
    assert [u.key for u in t.updated] == [{"store": "south", "sku": "a"}]
    assert t.inserted == [{"store": "south", "sku": "b", "qty": 1}]


def test_table_without_primary_key_falls_back_to_rowid():
    schema = "CREATE TABLE log (msg TEXT, level TEXT); INSERT INTO log VALUES ('a', 'info'), ('b', 'warn');"
    after = (
        schema
        + "UPDATE log SET level = 'error' WHERE msg = 'b'; INSERT INTO log VALUES ('c', 'info');"
    )
    t = diff_images(make_image(schema), make_image(after)).table("log")
    assert t is not None and t.key_kind == "rowid" and t.key == ["rowid"]
    assert [u.key for u in t.updated] == [{"rowid": 2}]
    assert t.inserted == [{"rowid": 3, "msg": "c", "level": "info"}]


def test_keyless_rows_with_duplicates_are_told_apart_by_rowid():
    schema = "CREATE TABLE tags (t TEXT); INSERT INTO tags VALUES ('x'), ('x');"
    t = diff_images(
        make_image(schema), make_image(schema + "DELETE FROM tags WHERE rowid = 2;")
    ).table("tags")
    assert t is not None and t.deleted == [{"rowid": 2, "t": "x"}]


def test_schema_changes_tables_and_columns_added_and_removed():
    before = BASE + "CREATE TABLE old (x); INSERT INTO old VALUES (1);"
    after = (
        BASE
        + "ALTER TABLE users ADD COLUMN age INTEGER; CREATE TABLE fresh (id INTEGER PRIMARY KEY); INSERT INTO fresh VALUES (7);"
    )
    d = diff_images(make_image(before), make_image(after))
    assert d.tables_added == ["fresh"] and d.tables_removed == ["old"]
    assert d.table("users").columns_added == ["age"]  # type: ignore[union-attr]
    assert d.table("fresh").status == "added" and d.table("fresh").inserted == [{"id": 7}]  # type: ignore[union-attr]
    assert d.table("old").status == "removed" and d.table("old").deleted == [{"x": 1}]  # type: ignore[union-attr]
    counts = d.counts()
    assert (counts.tables_added, counts.tables_removed, counts.columns_added) == (1, 1, 1)


def test_removed_column_is_reported_and_other_columns_still_compared():
    before = BASE
    after = (
        BASE + "ALTER TABLE users DROP COLUMN email; UPDATE users SET name = 'ANN' WHERE id = 1;"
    )
    t = diff_images(make_image(before), make_image(after)).table("users")
    assert t is not None and t.columns_removed == ["email"]
    assert [(u.key, list(u.changes)) for u in t.updated] == [({"id": 1}, ["name"])]


def test_blob_values_are_json_friendly():
    schema = "CREATE TABLE files (id INTEGER PRIMARY KEY, data BLOB);"
    t = diff_images(
        make_image(schema), make_image(schema + "INSERT INTO files VALUES (1, x'00ff');")
    ).table("files")
    assert t is not None and t.inserted == [{"id": 1, "data": "x'00ff'"}]


def test_render_truncates_rows_per_table_and_says_how_many_were_cut():
    after = BASE + "".join(f"INSERT INTO users VALUES ({i}, 'u{i}', NULL);" for i in range(10, 40))
    text = diff_images(make_image(BASE), make_image(after)).render(
        RenderLimits(max_rows_per_table=5)
    )
    assert text.count("\n  + ") == 5
    assert "not shown: 25 inserted row(s) (limit 5 rows per table)" in text


def test_render_truncates_long_values_and_says_by_how_much():
    after = BASE + f"UPDATE users SET name = '{'z' * 500}' WHERE id = 1;"
    text = diff_images(make_image(BASE), make_image(after)).render(RenderLimits(max_value_chars=20))
    assert "…(+482 chars)" in text


def test_render_respects_the_total_budget_and_names_the_tables_left_out():
    schema = "".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, v TEXT);" for i in range(20))
    after = schema + "".join(f"INSERT INTO t{i} VALUES (1, '{'v' * 50}');" for i in range(20))
    text = diff_images(make_image(schema), make_image(after)).render(RenderLimits(max_chars=600))
    assert len(text) <= 600
    assert "more changed table(s) not shown:" in text and "t19" in text


def test_diff_of_database_files_and_connections(tmp_path: Path):
    before, after = tmp_path / "a.db", tmp_path / "b.db"
    for path, script in ((before, BASE), (after, BASE + "DELETE FROM users WHERE id = 1;")):
        conn = sqlite3.connect(path)
        conn.executescript(script)
        conn.close()
    assert diff_databases(before, after).counts().deleted == 1
    conn = sqlite3.connect(after)
    assert diff_databases(str(before), conn).counts().deleted == 1


def test_missing_file_and_non_sqlite_bytes_are_typed_errors(tmp_path: Path):
    with pytest.raises(SnapshotError, match="does not exist"):
        load_image(tmp_path / "nope.db")
    with pytest.raises(SnapshotError, match="not a SQLite"):
        load_image(b"hello world, not a database")


def test_diff_of_a_2000_row_database_finds_exactly_the_updated_rows():
    """Its speed (target 5 ms) is measured by benchmarks/bench_diff.py in ``nox -s perf``."""
    rows = "".join(f"INSERT INTO users VALUES ({i}, 'u{i}', 'e{i}');" for i in range(10, 2010))
    before = make_image(BASE + rows)
    after = make_image(BASE + rows + "UPDATE users SET email = 'new' WHERE id % 40 = 0;")
    d = diff_images(before, after)
    assert d.counts().updated == 50
    assert (d.counts().inserted, d.counts().deleted) == (0, 0)
