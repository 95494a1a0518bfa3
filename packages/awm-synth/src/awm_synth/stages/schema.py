"""Stage: schema. SQLite DDL, executed table by table; up to 10% failing tables tolerated (dropped)."""

from __future__ import annotations

from datetime import datetime

from awm_core.llm.extract import extract_block
from awm_envs import freeze_now
from awm_synth.checks.sqlexec import (
    is_create_index,
    new_database,
    run_statements,
    short,
    statements,
    table_of_create,
)
from awm_synth.errors import ArtifactParseError
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import schema_prompt
from awm_synth.store.artifacts import DatabaseSchema, TableDDL, TaskSet
from awm_synth.store.records import StageRecord


def parse_schema(raw: str, reference_time: datetime) -> DatabaseSchema:
    """Split the DDL into tables and indexes; clock defaults are frozen to the reference time."""
    sql = freeze_now(extract_block(raw, "sql"), reference_time).sql
    tables: list[TableDDL] = []
    indexes: list[str] = []
    for stmt in statements(sql):
        name = table_of_create(stmt)
        if name:
            tables.append(TableDDL(name=name, ddl=stmt))
        elif is_create_index(stmt):
            indexes.append(stmt)
        elif stmt.strip().upper().startswith("PRAGMA"):
            continue
        else:
            raise ArtifactParseError(
                f"the schema may hold only CREATE TABLE and CREATE INDEX statements; found: {short(stmt)}"
            )
    if not tables:
        raise ArtifactParseError(
            "the answer defines no tables; answer with CREATE TABLE statements in a ```sql block"
        )
    return DatabaseSchema(tables=tables, indexes=indexes)


def check_schema(schema: DatabaseSchema) -> CheckResult:
    """Execute each table's DDL in order, with foreign keys on; keep the ones that run."""
    result = CheckResult(total=len(schema.tables))
    conn = new_database()
    try:
        kept: list[TableDDL] = []
        for table in schema.tables:
            run = run_statements(conn, [table.ddl])
            if run.failed:
                result.add(
                    "ddl_error", f"table {table.name}: {run.failed[0][1]} in: {short(table.ddl)}"
                )
                schema.dropped.append(table.name)
            else:
                kept.append(table)
        names = [t.name for t in kept]
        if len(set(names)) != len(names):
            result.add("ddl_error", "two CREATE TABLE statements define the same table")
        index_run = run_statements(conn, schema.indexes)
        for sql, err in index_run.failed:
            result.notes.append(f"index dropped: {err}: {short(sql)}")
        schema.tables = kept
        schema.indexes = index_run.ok
    finally:
        conn.close()
    return result


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    tasks: TaskSet = ctx.artifacts["tasks"]
    return await corrected_stage(
        ctx,
        "schema",
        schema_prompt(ctx.scenario, tasks.tasks, cfg.user_id, cfg.reference_time),
        lambda raw: parse_schema(raw, cfg.reference_time),
        check_schema,
        cfg.thresholds.tables,
    )
