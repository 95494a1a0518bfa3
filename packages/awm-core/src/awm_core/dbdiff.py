"""The structured difference between two SQLite database images.

Why a diff at all: the paper's code-augmented judge grounds its verdict in what
actually changed in the database, not in what the agent claims. The diff is
computed inside SQLite: both images are deserialized into one connection (the
final state attached as schema ``after``) and each table is compared with a
keyed ``LEFT JOIN`` that uses the primary-key index, so a 2,000-row database
diffs in well under a millisecond and only changed rows ever reach Python.

Row identity:

- the declared primary key (composite keys and ``WITHOUT ROWID`` tables included);
- ``rowid`` for tables without a declared key (``key_kind="rowid"``). SQLite keeps
  rowids stable across ordinary writes, but a ``VACUUM`` may renumber them; an
  agent that deletes and re-inserts a keyless row shows as delete + insert;
- whole-row comparison (``key_kind="row"``) when no key is usable on both sides
  (e.g. a ``WITHOUT ROWID`` table whose key column was dropped): rows are only
  inserted or deleted, never "updated".
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from awm_core.snapshot import DatabaseSource, load_image

KeyKind = Literal["primary_key", "rowid", "row"]
TableStatus = Literal["changed", "added", "removed"]

_AFTER = "after"  # schema name of the final state inside the diff connection


class ColumnChange(BaseModel):
    """One column's value before and after."""

    model_config = ConfigDict(extra="forbid")

    old: Any = None
    new: Any = None


class RowUpdate(BaseModel):
    """A row present on both sides whose non-key values changed."""

    model_config = ConfigDict(extra="forbid")

    key: dict[str, Any]
    changes: dict[str, ColumnChange]


class TableDiff(BaseModel):
    """What changed in one table: rows keyed by ``key`` and any column changes."""

    model_config = ConfigDict(extra="forbid")

    table: str
    status: TableStatus = "changed"
    key: list[str] = Field(
        default_factory=list, description="Key columns; ['rowid'] for the fallback."
    )
    key_kind: KeyKind = "primary_key"
    inserted: list[dict[str, Any]] = Field(default_factory=list)
    deleted: list[dict[str, Any]] = Field(default_factory=list)
    updated: list[RowUpdate] = Field(default_factory=list)
    columns_added: list[str] = Field(default_factory=list)
    columns_removed: list[str] = Field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(
            self.status != "changed"
            or self.inserted
            or self.deleted
            or self.updated
            or self.columns_added
            or self.columns_removed
        )


class DiffCounts(BaseModel):
    """Totals over all tables, for summaries and metrics."""

    model_config = ConfigDict(extra="forbid")

    tables_changed: int = 0
    inserted: int = 0
    deleted: int = 0
    updated: int = 0
    tables_added: int = 0
    tables_removed: int = 0
    columns_added: int = 0
    columns_removed: int = 0


@dataclass(frozen=True)
class RenderLimits:
    """Bounds on :meth:`DatabaseDiff.render`, so a diff never floods a judge's context.

    Anything cut is announced in the text (how many rows, which tables), so the
    judge knows the picture is partial rather than mistaking it for the whole.
    """

    max_rows_per_table: int = 20
    max_value_chars: int = 120
    max_chars: int = 6000


class DatabaseDiff(BaseModel):
    """The difference between an initial and a final database image."""

    model_config = ConfigDict(extra="forbid")

    tables: list[TableDiff] = Field(
        default_factory=list, description="Only tables with changes, in name order."
    )
    tables_added: list[str] = Field(default_factory=list)
    tables_removed: list[str] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.tables

    def table(self, name: str) -> TableDiff | None:
        """The diff of table ``name``, or ``None`` when it did not change."""
        return next((t for t in self.tables if t.table == name), None)

    def counts(self) -> DiffCounts:
        c = DiffCounts(tables_added=len(self.tables_added), tables_removed=len(self.tables_removed))
        for t in self.tables:
            c.tables_changed += 1
            c.inserted += len(t.inserted)
            c.deleted += len(t.deleted)
            c.updated += len(t.updated)
            c.columns_added += len(t.columns_added)
            c.columns_removed += len(t.columns_removed)
        return c

    def render(self, limits: RenderLimits | None = None) -> str:
        """A compact, bounded text rendering for prompts and terminals."""
        return render_diff(self, limits or RenderLimits())


# --------------------------------------------------------------------------- computing


@dataclass(frozen=True)
class _TableInfo:
    columns: list[str]
    pk: list[str]
    without_rowid: bool
    sql: str


def _q(name: str) -> str:
    """Quote an identifier for SQL (tables and columns may have any name)."""
    return '"' + name.replace('"', '""') + '"'


def _json_value(value: Any) -> Any:
    """SQLite values as JSON-friendly values: BLOBs become ``x'..'`` literals."""
    if isinstance(value, bytes):
        return "x'" + value.hex() + "'"
    return value


def _tables(conn: sqlite3.Connection, schema: str) -> dict[str, _TableInfo]:
    rows = conn.execute(
        f"SELECT name, sql FROM {_q(schema)}.sqlite_schema "
        "WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    out: dict[str, _TableInfo] = {}
    for name, sql in rows:
        sql = sql or ""
        if sql.upper().lstrip().startswith("CREATE VIRTUAL"):
            continue  # virtual tables need their module; their shadow tables are diffed instead
        cols = conn.execute(f"PRAGMA {_q(schema)}.table_xinfo({_q(name)})").fetchall()
        # table_xinfo: cid, name, type, notnull, dflt_value, pk, hidden (1 = virtual-table hidden)
        columns = [c[1] for c in cols if c[6] != 1]
        pk = [c[1] for c in sorted((c for c in cols if c[5] > 0), key=lambda c: c[5])]
        without_rowid = "WITHOUT" in sql.upper() and "ROWID" in sql.upper().split("WITHOUT", 1)[1]
        out[name] = _TableInfo(columns, pk, without_rowid, sql)
    return out


def _rowid_alias(columns: list[str]) -> str | None:
    lowered = {c.lower() for c in columns}
    return next((a for a in ("rowid", "_rowid_", "oid") if a not in lowered), None)


def _all_rows(
    conn: sqlite3.Connection, schema: str, table: str, columns: list[str]
) -> list[dict[str, Any]]:
    cols = ", ".join(_q(c) for c in columns)
    return [
        {c: _json_value(v) for c, v in zip(columns, row, strict=True)}
        for row in conn.execute(f"SELECT {cols} FROM {_q(schema)}.{_q(table)}")
    ]


def _diff_table(
    conn: sqlite3.Connection, name: str, before: _TableInfo, after: _TableInfo
) -> TableDiff:
    common = [c for c in after.columns if c in set(before.columns)]
    diff = TableDiff(
        table=name,
        columns_added=[c for c in after.columns if c not in set(before.columns)],
        columns_removed=[c for c in before.columns if c not in set(after.columns)],
    )
    t_b = f"main.{_q(name)}"
    t_a = f"{_AFTER}.{_q(name)}"

    key: list[str]
    key_exprs: list[str]  # expressions usable as "<alias>.<expr>"
    if before.pk and before.pk == after.pk and all(k in common for k in before.pk):
        key, key_exprs, diff.key_kind = list(before.pk), [_q(k) for k in before.pk], "primary_key"
    elif not before.without_rowid and not after.without_rowid and _rowid_alias(common):
        alias = _rowid_alias(common)
        assert alias is not None
        key, key_exprs, diff.key_kind = [alias], [alias], "rowid"
    else:
        key, key_exprs, diff.key_kind = [], [], "row"
    diff.key = key

    if diff.key_kind == "row":
        cols = ", ".join(_q(c) for c in common)
        for target, other, bucket in ((t_a, t_b, diff.inserted), (t_b, t_a, diff.deleted)):
            for row in conn.execute(
                f"SELECT {cols} FROM {target} EXCEPT SELECT {cols} FROM {other}"
            ):
                bucket.append({c: _json_value(v) for c, v in zip(common, row, strict=True)})
        return diff

    non_key = [c for c in common if c not in key]
    on = " AND ".join(f"a.{k} IS b.{k}" for k in key_exprs)
    # A row "has no partner" when the partner's rowid (or NOT NULL key column of a
    # WITHOUT ROWID table) is NULL after the LEFT JOIN.
    marker = (
        f"b.{key_exprs[0]}" if (before.without_rowid or diff.key_kind == "rowid") else "b.rowid"
    )
    a_cols = [f"a.{k}" for k in key_exprs] + [f"a.{_q(c)}" for c in non_key]
    b_cols = [f"b.{_q(c)}" for c in non_key]
    differs = " OR ".join(f"a.{_q(c)} IS NOT b.{_q(c)}" for c in non_key)
    where = f"{marker} IS NULL" + (f" OR {differs}" if differs else "")
    sql = (
        f"SELECT {marker} IS NULL, {', '.join(a_cols + b_cols)} "
        f"FROM {t_a} AS a LEFT JOIN {t_b} AS b ON {on} WHERE {where}"
    )
    nk, nn = len(key), len(non_key)
    for row in conn.execute(sql):
        key_vals = {k: _json_value(v) for k, v in zip(key, row[1 : 1 + nk], strict=True)}
        new_vals = row[1 + nk : 1 + nk + nn]
        if row[0]:
            full = dict(key_vals)
            full.update({c: _json_value(v) for c, v in zip(non_key, new_vals, strict=True)})
            diff.inserted.append(full)
            continue
        old_vals = row[1 + nk + nn :]
        changes = {
            c: ColumnChange(old=_json_value(o), new=_json_value(n))
            for c, o, n in zip(non_key, old_vals, new_vals, strict=True)
            if o != n or type(o) is not type(n)
        }
        if changes:
            diff.updated.append(RowUpdate(key=key_vals, changes=changes))

    b_select = [f"b.{k}" for k in key_exprs] + [f"b.{_q(c)}" for c in non_key]
    on_rev = " AND ".join(f"a.{k} IS b.{k}" for k in key_exprs)
    sql = f"SELECT {', '.join(b_select)} FROM {t_b} AS b WHERE NOT EXISTS (SELECT 1 FROM {t_a} AS a WHERE {on_rev})"
    names = key + non_key
    for row in conn.execute(sql):
        diff.deleted.append({c: _json_value(v) for c, v in zip(names, row, strict=True)})
    return diff


def diff_images(before: bytes, after: bytes) -> DatabaseDiff:
    """Diff two database images (``Connection.serialize()`` output)."""
    result = DatabaseDiff()
    if before == after:
        return result  # byte-identical images cannot differ; skip all SQL
    conn = sqlite3.connect(":memory:")
    try:
        if before:
            conn.deserialize(before)
        conn.execute(f"ATTACH DATABASE ':memory:' AS {_AFTER}")
        if after:
            conn.deserialize(after, name=_AFTER)
        conn.execute("PRAGMA query_only = ON")
        tb, ta = _tables(conn, "main"), _tables(conn, _AFTER)
        result.tables_added = [n for n in ta if n not in tb]
        result.tables_removed = [n for n in tb if n not in ta]
        for name in sorted(set(tb) | set(ta)):
            if name in tb and name in ta:
                td = _diff_table(conn, name, tb[name], ta[name])
            elif name in ta:
                info = ta[name]
                td = TableDiff(
                    table=name,
                    status="added",
                    key=info.pk,
                    inserted=_all_rows(conn, _AFTER, name, info.columns),
                )
            else:
                info = tb[name]
                td = TableDiff(
                    table=name,
                    status="removed",
                    key=info.pk,
                    deleted=_all_rows(conn, "main", name, info.columns),
                )
            if td.has_changes:
                result.tables.append(td)
    finally:
        conn.close()
    return result


def diff_databases(before: DatabaseSource, after: DatabaseSource) -> DatabaseDiff:
    """Diff two databases given as images, file paths or connections."""
    return diff_images(load_image(before), load_image(after))


# --------------------------------------------------------------------------- rendering


def _fmt_value(value: Any, max_chars: int) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > max_chars:
        cut = len(text) - max_chars
        text = f"{text[:max_chars]}…(+{cut} chars)"
    return text


def _fmt_row(row: dict[str, Any], max_chars: int) -> str:
    return "{" + ", ".join(f"{k}: {_fmt_value(v, max_chars)}" for k, v in row.items()) + "}"


def _fmt_key(key: dict[str, Any], max_chars: int) -> str:
    return ", ".join(f"{k}={_fmt_value(v, max_chars)}" for k, v in key.items())


def _render_table(t: TableDiff, lim: RenderLimits) -> list[str]:
    key = ", ".join(t.key) if t.key else "whole row"
    head = f"table {t.table} [{t.status}; key: {key}]: +{len(t.inserted)} inserted, -{len(t.deleted)} deleted, ~{len(t.updated)} updated"
    lines = [head]
    if t.columns_added:
        lines.append(f"  columns added: {', '.join(t.columns_added)}")
    if t.columns_removed:
        lines.append(f"  columns removed: {', '.join(t.columns_removed)}")
    budget = lim.max_rows_per_table
    hidden: list[str] = []
    for kind, rows in (("updated", t.updated), ("inserted", t.inserted), ("deleted", t.deleted)):
        shown = rows[: max(budget, 0)]
        budget -= len(shown)
        for r in shown:
            if isinstance(r, RowUpdate):
                parts = "; ".join(
                    f"{c}: {_fmt_value(ch.old, lim.max_value_chars)} -> {_fmt_value(ch.new, lim.max_value_chars)}"
                    for c, ch in r.changes.items()
                )
                lines.append(f"  ~ {_fmt_key(r.key, lim.max_value_chars)}: {parts}")
            else:
                sign = "+" if kind == "inserted" else "-"
                lines.append(f"  {sign} {_fmt_row(r, lim.max_value_chars)}")
        if len(rows) > len(shown):
            hidden.append(f"{len(rows) - len(shown)} {kind}")
    if hidden:
        lines.append(
            f"  … not shown: {', '.join(hidden)} row(s) (limit {lim.max_rows_per_table} rows per table)"
        )
    return lines


def render_diff(diff: DatabaseDiff, limits: RenderLimits) -> str:
    """Render ``diff`` within ``limits``; every cut is stated in the output."""
    if diff.is_empty:
        return "No database changes: the initial and final states are identical."
    c = diff.counts()
    header = (
        f"Database changes: {c.tables_changed} table(s) changed; "
        f"+{c.inserted} inserted, -{c.deleted} deleted, ~{c.updated} updated row(s)"
    )
    if diff.tables_added or diff.tables_removed:
        header += (
            f"; tables added: {', '.join(diff.tables_added) or 'none'}"
            f"; tables removed: {', '.join(diff.tables_removed) or 'none'}"
        )
    blocks = ["\n".join(_render_table(t, limits)) for t in diff.tables]
    out = [header]
    used = len(header)
    for i, block in enumerate(blocks):
        rest = diff.tables[i + 1 :]
        reserve = len(_cut_note(rest, limits)) + 1 if rest else 0
        if used + 1 + len(block) + reserve <= limits.max_chars:
            out.append(block)
            used += 1 + len(block)
            continue
        # This table does not fit. Show as much of it as the budget allows (so one
        # huge table never renders as nothing), then say what was left out.
        shown = len(out) - 1
        note = _cut_note(diff.tables[shown:], limits)
        room = limits.max_chars - used - len(note) - 2
        if room > 80:
            partial = block[:room].rsplit("\n", 1)[0]
            out.append(f"{partial}\n  … (rest of this table cut at {limits.max_chars} characters)")
            note = _cut_note(diff.tables[shown + 1 :], limits) if rest else ""
        if note:
            out.append(note)
        break
    text = "\n".join(out)
    return text if len(text) <= limits.max_chars else text[: limits.max_chars - 1] + "…"


def _cut_note(rest: list[TableDiff], limits: RenderLimits) -> str:
    names = ", ".join(r.table for r in rest)
    if len(names) > 200:
        names = names[:200] + "…"
    return (
        f"[truncated at {limits.max_chars} characters: {len(rest)} more changed "
        f"table(s) not shown: {names}]"
    )
