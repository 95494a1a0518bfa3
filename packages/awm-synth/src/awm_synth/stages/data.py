"""Stage: seed data. INSERTs in FK order, executed one by one; clock reads frozen; 10% failures tolerated."""

from __future__ import annotations

from datetime import datetime

from awm_core.llm.extract import extract_block
from awm_envs import freeze_now
from awm_synth.checks.sqlexec import (
    foreign_key_problems,
    new_database,
    run_statements,
    short,
    statements,
    table_counts,
    table_of_insert,
)
from awm_synth.errors import ArtifactParseError
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import data_prompt
from awm_synth.store.artifacts import DatabaseSchema, SeedData, TaskSet
from awm_synth.store.records import StageRecord


def parse_seed(raw: str, reference_time: datetime) -> SeedData:
    """Split the answer into INSERTs and rewrite every clock read as a literal at the reference time."""
    frozen = freeze_now(extract_block(raw, "sql"), reference_time)
    inserts = []
    for stmt in statements(frozen.sql):
        if table_of_insert(stmt) is None:
            raise ArtifactParseError(
                f"seed data may hold only INSERT statements; found: {short(stmt)}"
            )
        inserts.append(stmt)
    if not inserts:
        raise ArtifactParseError("the answer has no INSERT statements")
    return SeedData(inserts=inserts, frozen=frozen.rewrites)


def check_seed(seed: SeedData, schema: DatabaseSchema) -> CheckResult:
    """Run the inserts on the schema in order (FK enforced); keep the rows that insert."""
    result = CheckResult(total=len(seed.inserts))
    if seed.frozen:
        result.notes.append(f"froze {len(seed.frozen)} clock read(s) to the reference time")
    conn = new_database()
    try:
        conn.executescript(schema.sql())
        conn.execute("PRAGMA foreign_keys = ON")
        run = run_statements(conn, seed.inserts)
        for sql, err in run.failed:
            cause = "fk_violation" if "FOREIGN KEY" in err.upper() else "insert_error"
            result.add(cause, f"{err} in: {short(sql)}")
            seed.dropped.append(sql)
        seed.inserts = run.ok
        for problem in foreign_key_problems(conn):
            result.add("fk_violation", problem)
        empty = [t for t, n in table_counts(conn).items() if n == 0]
        if empty:
            result.notes.append(f"tables with no rows: {', '.join(empty)}")
    finally:
        conn.close()
    return result


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    tasks: TaskSet = ctx.artifacts["tasks"]
    schema: DatabaseSchema = ctx.artifacts["schema"]
    return await corrected_stage(
        ctx,
        "data",
        data_prompt(ctx.scenario, tasks.tasks, schema, cfg.user_id, cfg.reference_time),
        lambda raw: parse_seed(raw, cfg.reference_time),
        lambda seed: check_seed(seed, schema),
        cfg.thresholds.inserts,
    )
