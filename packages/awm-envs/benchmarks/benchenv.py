"""Generate the benchmark bundle: a deterministic operations back-office (16 tables, ~2,700 rows, 26 tools).

Written as a generator rather than checked-in files so its size can be
scaled and so it never drifts from the bundle format: it is produced through
the same files a hand-written bundle has and loaded by the same code.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

REFERENCE_TIME = "2025-06-01T09:00:00Z"


@dataclass(frozen=True)
class Col:
    name: str
    sql: str  # INTEGER | TEXT | REAL
    ref: str | None = None  # referenced table


@dataclass(frozen=True)
class Tbl:
    name: str
    entity: str
    cols: tuple[Col, ...]
    rows: int
    writable: bool = False


def _t(name: str, entity: str, rows: int, *cols: Col, writable: bool = False) -> Tbl:
    return Tbl(name, entity, cols, rows, writable)


TABLES: tuple[Tbl, ...] = (
    _t("regions", "region", 12, Col("name", "TEXT")),
    _t(
        "departments", "department", 16, Col("name", "TEXT"), Col("region_id", "INTEGER", "regions")
    ),
    _t(
        "employees",
        "employee",
        200,
        Col("name", "TEXT"),
        Col("email", "TEXT"),
        Col("department_id", "INTEGER", "departments"),
        Col("salary", "INTEGER"),
    ),
    _t(
        "customers",
        "customer",
        400,
        Col("name", "TEXT"),
        Col("email", "TEXT"),
        Col("region_id", "INTEGER", "regions"),
        Col("tier", "TEXT"),
        writable=True,
    ),
    _t("suppliers", "supplier", 40, Col("name", "TEXT"), Col("region_id", "INTEGER", "regions")),
    _t("categories", "category", 20, Col("name", "TEXT")),
    _t(
        "products",
        "product",
        300,
        Col("name", "TEXT"),
        Col("category_id", "INTEGER", "categories"),
        Col("supplier_id", "INTEGER", "suppliers"),
        Col("price_cents", "INTEGER"),
        writable=True,
    ),
    _t("warehouses", "warehouse", 8, Col("name", "TEXT"), Col("region_id", "INTEGER", "regions")),
    _t(
        "stock",
        "stock",
        300,
        Col("product_id", "INTEGER", "products"),
        Col("warehouse_id", "INTEGER", "warehouses"),
        Col("quantity", "INTEGER"),
    ),
    _t(
        "orders",
        "order",
        500,
        Col("customer_id", "INTEGER", "customers"),
        Col("status", "TEXT"),
        Col("created_at", "TEXT"),
        writable=True,
    ),
    _t(
        "order_items",
        "order_item",
        600,
        Col("order_id", "INTEGER", "orders"),
        Col("product_id", "INTEGER", "products"),
        Col("quantity", "INTEGER"),
    ),
    _t(
        "shipments",
        "shipment",
        150,
        Col("order_id", "INTEGER", "orders"),
        Col("warehouse_id", "INTEGER", "warehouses"),
        Col("status", "TEXT"),
    ),
    _t(
        "invoices",
        "invoice",
        150,
        Col("order_id", "INTEGER", "orders"),
        Col("amount_cents", "INTEGER"),
        Col("status", "TEXT"),
    ),
    _t(
        "payments",
        "payment",
        100,
        Col("invoice_id", "INTEGER", "invoices"),
        Col("amount_cents", "INTEGER"),
        Col("method", "TEXT"),
    ),
    _t(
        "tickets",
        "ticket",
        120,
        Col("customer_id", "INTEGER", "customers"),
        Col("subject", "TEXT"),
        Col("status", "TEXT"),
        writable=True,
    ),
    _t(
        "ticket_comments",
        "ticket_comment",
        200,
        Col("ticket_id", "INTEGER", "tickets"),
        Col("employee_id", "INTEGER", "employees"),
        Col("body", "TEXT"),
    ),
)

STATUSES = {
    "orders": ["pending", "paid", "shipped", "cancelled"],
    "tickets": ["open", "pending", "closed"],
}
WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "grove",
    "harbor",
    "iris",
    "juniper",
    "kelp",
    "lotus",
    "maple",
    "nova",
    "onyx",
    "pine",
    "quartz",
    "river",
    "sage",
    "tide",
]


def _value(rng: random.Random, table: Tbl, col: Col, i: int, counts: dict[str, int]) -> object:
    if col.ref:
        return rng.randint(1, counts[col.ref])
    if col.name == "email":
        return f"{table.entity}{i}@example.com"
    if col.name == "status":
        return rng.choice(STATUSES.get(table.name, ["new", "done", "failed"]))
    if col.name == "created_at":
        return f"2025-05-{rng.randint(1, 31):02d}T{rng.randint(0, 23):02d}:00:00Z"
    if col.name == "tier":
        return rng.choice(["bronze", "silver", "gold"])
    if col.name == "method":
        return rng.choice(["card", "transfer", "voucher"])
    if col.sql == "INTEGER":
        return rng.randint(1, 100_000)
    return f"{rng.choice(WORDS).title()} {rng.choice(WORDS)} {i}"


def _sql_literal(v: object) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return str(v)


def _schema_sql() -> str:
    out = ["-- Generated by awm_envs.benchenv: an operations back-office."]
    for t in TABLES:
        cols = [f"    {t.entity}_id INTEGER PRIMARY KEY"]
        for c in t.cols:
            ref = f" REFERENCES {c.ref}({TABLES_BY_NAME[c.ref].entity}_id)" if c.ref else ""
            cols.append(f"    {c.name} {c.sql} NOT NULL{ref}")
        out.append(f"CREATE TABLE {t.name} (\n" + ",\n".join(cols) + "\n);")
        for c in t.cols:
            if c.ref or c.name in ("email", "status"):
                out.append(f"CREATE INDEX ix_{t.name}_{c.name} ON {t.name}({c.name});")
    return "\n".join(out) + "\n"


def _seed_sql(scale: float) -> str:
    rng = random.Random(20250601)
    counts: dict[str, int] = {}
    out = []
    for t in TABLES:
        n = max(4, int(t.rows * scale))
        counts[t.name] = n
        names = ", ".join([f"{t.entity}_id"] + [c.name for c in t.cols])
        for start in range(0, n, 100):
            rows = []
            for i in range(start + 1, min(n, start + 100) + 1):
                vals = [i] + [_value(rng, t, c, i, counts) for c in t.cols]
                rows.append("(" + ", ".join(_sql_literal(v) for v in vals) + ")")
            out.append(f"INSERT INTO {t.name} ({names}) VALUES\n  " + ",\n  ".join(rows) + ";")
    return "\n".join(out) + "\n"


def _class(t: Tbl) -> str:
    return "".join(p.title() for p in t.entity.split("_"))


def _app_py() -> str:
    lines = [
        '"""Operations back-office (generated by awm_envs.benchenv)."""',
        "",
        "from fastapi import Depends, FastAPI, HTTPException, Query",
        "from pydantic import BaseModel, ConfigDict",
        "from sqlalchemy import ForeignKey, Integer, String, create_engine, func, select",
        "from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column",
        "",
        f'REFERENCE_TIME = "{REFERENCE_TIME}"',
        'app = FastAPI(title="Operations back-office")',
        "",
        "",
        "class Base(DeclarativeBase):",
        "    pass",
        "",
        "",
        "def get_db():",
        '    engine = create_engine("sqlite:///backoffice.db")',
        "    with Session(engine) as db:",
        "        yield db",
        "",
    ]
    for t in TABLES:
        cls = _class(t)
        lines += [
            "",
            f"class {cls}(Base):",
            f'    __tablename__ = "{t.name}"',
            f"    {t.entity}_id: Mapped[int] = mapped_column(Integer, primary_key=True)",
        ]
        for c in t.cols:
            py = "int" if c.sql == "INTEGER" else "str"
            if c.ref:
                lines.append(
                    f'    {c.name}: Mapped[int] = mapped_column(ForeignKey("{c.ref}.{TABLES_BY_NAME[c.ref].entity}_id"))'
                )
            else:
                lines.append(
                    f"    {c.name}: Mapped[{py}] = mapped_column({'Integer' if py == 'int' else 'String'})"
                )
        lines += [
            "",
            "",
            f"class {cls}Out(BaseModel):",
            "    model_config = ConfigDict(from_attributes=True)",
            f"    {t.entity}_id: int",
        ]
        for c in t.cols:
            lines.append(f"    {c.name}: {'int' if c.sql == 'INTEGER' else 'str'}")
        lines += [
            "",
            "",
            f"class {cls}Page(BaseModel):",
            f"    items: list[{cls}Out]",
            "    total: int",
            "",
        ]
        lines += [
            "",
            f'@app.get("/{t.name}/{{{t.entity}_id}}", operation_id="get_{t.entity}", response_model={cls}Out)',
            f"def get_{t.entity}({t.entity}_id: int, db: Session = Depends(get_db)):",
            f'    """One {t.entity.replace("_", " ")} by id."""',
            f"    row = db.get({cls}, {t.entity}_id)",
            "    if row is None:",
            f'        raise HTTPException(404, f"{t.entity} {{{t.entity}_id}} not found; use list_{t.name} to find ids")',
            "    return row",
        ]
        if t.name in (
            "customers",
            "products",
            "orders",
            "tickets",
            "employees",
            "shipments",
            "invoices",
        ):
            filt = next((c for c in t.cols if c.ref), None)
            fparam = f"{filt.name}: int | None = None, " if filt else ""
            lines += [
                "",
                "",
                f'@app.get("/{t.name}", operation_id="list_{t.name}", response_model={cls}Page)',
                f"def list_{t.name}({fparam}limit: int = Query(20, ge=1, le=100), offset: int = Query(0, ge=0), db: Session = Depends(get_db)):",
                f'    """List {t.name.replace("_", " ")}, optionally filtered; paginated."""',
                f"    stmt = select({cls})",
            ]
            if filt:
                lines += [
                    f"    if {filt.name} is not None:",
                    f"        stmt = stmt.where({cls}.{filt.name} == {filt.name})",
                ]
            lines += [
                "    total = db.scalar(select(func.count()).select_from(stmt.subquery()))",
                f"    rows = db.scalars(stmt.order_by({cls}.{t.entity}_id).limit(limit).offset(offset)).all()",
                f"    return {cls}Page(items=rows, total=total)",
            ]
        if t.writable:
            field_lines = [
                f"    {c.name}: {'int' if c.sql == 'INTEGER' else 'str'}" for c in t.cols
            ]
            lines += ["", "", f"class {cls}In(BaseModel):", *field_lines, ""]
            lines += [
                "",
                f'@app.post("/{t.name}", operation_id="create_{t.entity}", response_model={cls}Out)',
                f"def create_{t.entity}(body: {cls}In, db: Session = Depends(get_db)):",
                f'    """Create a {t.entity.replace("_", " ")}."""',
            ]
            for c in t.cols:
                if c.ref:
                    rc = _class(TABLES_BY_NAME[c.ref])
                    lines += [
                        f"    if db.get({rc}, body.{c.name}) is None:",
                        f'        raise HTTPException(404, f"{c.ref} {{body.{c.name}}} not found")',
                    ]
            lines += [
                f"    row = {cls}(**body.model_dump())",
                "    db.add(row)",
                "    db.commit()",
                "    return row",
            ]
            status = next((c for c in t.cols if c.name == "status"), None)
            if status:
                choices = STATUSES.get(t.name, ["new", "done", "failed"])
                lines += [
                    "",
                    "",
                    f'@app.post("/{t.name}/{{{t.entity}_id}}/status", operation_id="set_{t.entity}_status", response_model={cls}Out)',
                    f"def set_{t.entity}_status({t.entity}_id: int, status: str = Query(..., description='One of {', '.join(choices)}'), db: Session = Depends(get_db)):",
                    f'    """Move a {t.entity} to another status."""',
                    f"    row = db.get({cls}, {t.entity}_id)",
                    "    if row is None:",
                    f'        raise HTTPException(404, f"{t.entity} {{{t.entity}_id}} not found")',
                    f"    if status not in {choices!r}:",
                    f'        raise HTTPException(400, f"unknown status {{status!r}}; valid: {", ".join(choices)}")',
                    "    if row.status == status:",
                    f'        raise HTTPException(409, f"{t.entity} {{{t.entity}_id}} is already {{status}}")',
                    "    row.status = status",
                    "    db.commit()",
                    "    return row",
                ]
    lines += [
        "",
        "",
        '@app.get("/time", operation_id="get_current_time")',
        "def get_current_time() -> dict:",
        '    """The back-office clock (frozen)."""',
        '    return {"now": REFERENCE_TIME}',
        "",
    ]
    return "\n".join(lines)


TABLES_BY_NAME = {t.name: t for t in TABLES}


def write_bench_bundle(dest: Path, *, env_id: str = "bench_backoffice", scale: float = 1.0) -> Path:
    """Write the bundle into ``dest/env_id`` and return that folder (deterministic)."""
    root = Path(dest) / env_id
    root.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format_version": 1,
        "id": env_id,
        "name": "Operations back-office (benchmark)",
        "description": "Generated benchmark environment: customers, orders, stock, invoices, tickets.",
        "category": "benchmark",
        "version": "0.1.0",
        "created_with": {"tool": "awm-envs benchenv", "version": "1"},
        "reference_time": REFERENCE_TIME,
        "user_id": 1,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    (root / "schema.sql").write_text(_schema_sql())
    (root / "seed.sql").write_text(_seed_sql(scale))
    (root / "app.py").write_text(_app_py())
    (root / "tasks.json").write_text("[]\n")
    return root
