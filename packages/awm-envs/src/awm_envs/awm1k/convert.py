"""Convert one scenario of the official AWM-1K release into the files of an awm bundle.

Its known defects are repaired on the way (:mod:`awm_envs.awm1k.repair`):

* backslash-escaped quotes in INSERT statements (``\\'`` is not SQL);
* ``datetime('now', ...)`` and ``CURRENT_TIMESTAMP`` frozen to a fixed reference time;
* tool code built around a module-level ``create_engine(...)``, ``SessionLocal()``
  inside each endpoint and ``uvicorn.run`` at the bottom (see :mod:`awm_envs.awm1k.compat`);
* both verifier modes (``verify_task`` evidence, ``verify_task_completion`` decisions),
  told apart by each function's name and signature, inlined into a self-contained
  ``verifiers.py`` (:mod:`awm_envs.awm1k.verifier_code`) the verifier sandbox runs;
* a DDL statement with one unbalanced parenthesis, where the repair is unambiguous.

A scenario that cannot become a bundle raises :class:`ImportFailure` naming the
part that failed. Reading the release is :mod:`awm_envs.awm1k.read`, importing
a whole release :mod:`awm_envs.awm1k.importer`, exporting :mod:`awm_envs.awm1k.export`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from typing import Any

from awm_core.models import Complexity, CreatedWith, EnvironmentManifest, Task
from awm_envs import __version__
from awm_envs.awm1k.read import ImportProblem, OfficialScenario
from awm_envs.awm1k.repair import fix_escaped_quotes, repair_parens, rewrite_app
from awm_envs.awm1k.verifier_code import (
    OfficialVerifier,
    factory_name,
    factory_source,
    verifiers_module,
)
from awm_envs.bundle.sqlscript import split_statements
from awm_envs.bundle.timefreeze import freeze_now

DEFAULT_REFERENCE_TIME = datetime(2025, 6, 1, 12, 0, 0)
MAX_FAILED_INSERT_RATIO = 0.10  # the paper tolerates up to 10% failing inserts


class ImportFailure(Exception):
    """One scenario cannot become a bundle; ``stage`` says which part failed."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.message = message


def _schema_sql(
    sc: OfficialScenario, reference: datetime, counts: dict[str, int]
) -> tuple[str, list[ImportProblem]]:
    """The tables' DDL and indexes, each checked on a scratch database as it is added;
    a DDL with one unbalanced parenthesis is repaired where that is unambiguous."""
    tables = (sc.db_schema or {}).get("tables")
    if not tables:
        raise ImportFailure("db", "no tables in gen_db.jsonl")
    conn = sqlite3.connect(":memory:")
    notes: list[ImportProblem] = []

    def accepts(sql: str) -> bool:
        try:
            conn.execute("SAVEPOINT probe")
            conn.execute(sql)
        except sqlite3.Error:
            return False
        finally:
            conn.execute("ROLLBACK TO probe")
            conn.execute("RELEASE probe")
        return True

    parts = []
    for table in tables:
        frozen = freeze_now(str(table.get("ddl", "")).strip().rstrip(";"), reference)
        counts["clock_reads_frozen"] += len(frozen.rewrites)
        ddl = frozen.sql
        if not ddl:
            raise ImportFailure("db", f"table {table.get('name')!r} has no DDL")
        if not accepts(ddl):
            fixed = repair_parens(ddl, accepts)
            if fixed is None:
                try:
                    conn.execute(ddl)
                except sqlite3.Error as exc:
                    raise ImportFailure(
                        "db", f"DDL of table {table.get('name')!r} fails: {exc}"
                    ) from None
            else:
                ddl = fixed
                counts["ddl_repaired"] += 1
                notes.append(
                    ImportProblem(
                        sc.name,
                        "db",
                        f"repaired an unbalanced parenthesis in the DDL of {table.get('name')!r}",
                        False,
                    )
                )
        conn.execute(ddl)
        parts.append(ddl + ";")
        for index in table.get("indexes") or []:
            sql = str(index).strip().rstrip(";")
            try:
                conn.execute(sql)
            except sqlite3.Error as exc:
                raise ImportFailure("db", f"index {sql[:60]!r} fails: {exc}") from None
            parts.append(sql + ";")
    conn.close()
    return "\n\n".join(parts) + "\n", notes


def _seed_sql(
    sc: OfficialScenario, schema_sql: str, reference: datetime, counts: dict[str, int]
) -> tuple[str, list[ImportProblem]]:
    """Repair the inserts and keep those that execute; fail past the 10% tolerance."""
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    for stmt in split_statements(schema_sql):
        try:
            conn.execute(stmt.sql)
        except sqlite3.Error as exc:
            raise ImportFailure("db", f"DDL statement {stmt.index} fails: {exc}") from None
    kept: list[str] = []
    notes: list[ImportProblem] = []
    total = 0
    for table in (sc.sample or {}).get("tables", []):
        for raw in table.get("insert_statements") or []:
            total += 1
            text = str(raw).strip().rstrip(";")
            if fix_escaped_quotes(text) != text:
                counts["inserts_quotes_repaired"] += 1
            frozen = freeze_now(fix_escaped_quotes(text), reference)
            counts["clock_reads_frozen"] += len(frozen.rewrites)
            sql = frozen.sql + ";"
            try:
                conn.execute(sql)
            except sqlite3.Error as exc:
                notes.append(
                    ImportProblem(
                        sc.name,
                        "sample",
                        f"dropped insert into {table.get('table_name')}: {exc}",
                        False,
                    )
                )
                continue
            kept.append(sql)
    conn.close()
    counts["inserts"] = len(kept)
    counts["inserts_dropped"] = total - len(kept)
    if total == 0:
        raise ImportFailure("sample", "no insert statements in gen_sample.jsonl")
    if (total - len(kept)) / total > MAX_FAILED_INSERT_RATIO:
        raise ImportFailure(
            "sample",
            f"{total - len(kept)} of {total} inserts fail (more than {MAX_FAILED_INSERT_RATIO:.0%})",
        )
    return "\n".join(kept) + "\n", notes


def _choose_verifiers(
    sc: OfficialScenario, task_count: int, counts: dict[str, int], factories: dict[int, str]
) -> tuple[dict[int, tuple[str, OfficialVerifier]], list[ImportProblem]]:
    """Per task index, the native name and the official verifier it runs (when usable);
    each usable one's factory source goes into ``factories`` (for ``verifiers.py``)."""
    chosen: dict[int, tuple[str, OfficialVerifier]] = {}
    notes: list[ImportProblem] = []
    for idx in sorted(sc.verifiers):
        if idx >= task_count:
            continue
        verifier = sc.verifiers[idx]
        try:
            factories[idx] = factory_source(factory_name(idx), verifier)
        except (SyntaxError, ValueError) as exc:
            notes.append(
                ImportProblem(sc.name, "verifier", f"task {idx}: verifier unusable: {exc}", False)
            )
            continue
        chosen[idx] = (f"verify_task_{idx}", verifier)
        counts[f"verifiers_{verifier.mode}"] += 1
        if reads_clock(verifier.code):
            counts["verifiers_reading_clock"] += 1
            notes.append(
                ImportProblem(
                    sc.name,
                    "verifier",
                    f"task {idx}: the verifier reads the wall clock ('now'); its verdict "
                    "can change from day to day",
                    False,
                )
            )
    return chosen, notes


def _criteria(text: Any) -> list[str]:
    if isinstance(text, list):
        return [str(t).strip() for t in text if str(t).strip()]
    if isinstance(text, str):
        return [line.strip() for line in text.splitlines() if line.strip()]
    return []


def _row_criteria(rows: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Success and failure criteria from a task's rows' ``raw_response`` (the generator's
    JSON reply; sql-mode rows carry them), for the judge; empty when there are none."""
    for kind in ("verifier_sql", "verifier_code"):
        raw = rows.get(kind, {}).get("raw_response")
        try:
            reply = json.loads(raw) if isinstance(raw, str) else raw
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(reply, dict):
            success = _criteria(reply.get("success_criteria"))
            failure = _criteria(reply.get("failure_criteria"))
            if success or failure:
                return success, failure
    return [], []


def _awm_tasks(sc: OfficialScenario, verifier_names: dict[int, str]) -> list[Task]:
    """Tasks written by :func:`~awm_envs.awm1k.export.export_awm`: full fidelity."""
    tasks = [Task.model_validate(raw) for raw in sc.awm_tasks or []]
    by_index = {i: t for i, t in enumerate(tasks)}
    for idx, name in verifier_names.items():
        by_index[idx].verifier = name
    return tasks


def _release_tasks(
    sc: OfficialScenario, verifier_names: dict[int, str], notes: list[ImportProblem]
) -> list[Task]:
    """Tasks from the release's instructions; empty ones skipped, missing verifiers noted;
    success and failure criteria from the verifier rows' ``raw_response``."""
    tasks: list[Task] = []
    for idx, text in enumerate(sc.tasks):
        if not text.strip():
            notes.append(ImportProblem(sc.name, "tasks", f"task {idx} is empty; skipped", False))
            continue
        if idx not in verifier_names:
            notes.append(
                ImportProblem(sc.name, "verifier", f"task {idx} has no usable verifier", False)
            )
        success, failure = _row_criteria(sc.rows.get(idx, {}))
        tasks.append(
            Task(
                id=f"task_{idx}",
                instruction=text.strip(),
                # the release does not label complexity; the bucket is a placeholder
                complexity=Complexity.MEDIUM,
                verifier=verifier_names.get(idx),
                success_criteria=success,
                failure_criteria=failure,
                # no reference solution yet: `awm envs validate` reports it unproven,
                # `awm envs prove` looks for one
                tags=["awm1k", "complexity-unlabelled", "unproven"],
            )
        )
    return tasks


def _manifest(sc: OfficialScenario, reference: datetime) -> EnvironmentManifest:
    category = re.sub(r"_\d+$", "", sc.name) or sc.name
    return EnvironmentManifest(
        id=sc.name,
        name=sc.name.replace("_", " ").title(),
        description=sc.description or sc.name,
        category=category,
        created_with=CreatedWith(tool="awm-import", version=__version__),
        reference_time=reference,
    )


COUNT_KEYS = (
    "tasks",
    "verifiers_code",
    "verifiers_sql",
    "tasks_without_verifier",
    "tasks_with_reference",
    "inserts",
    "inserts_dropped",
    "inserts_quotes_repaired",
    "ddl_repaired",
    "duplicate_verifier_rows",
    "clock_reads_frozen",
    "verifiers_reading_clock",
)

_CLOCK_READ = re.compile(r"'now'|\bCURRENT_(TIMESTAMP|DATE|TIME)\b", re.IGNORECASE)


def reads_clock(code: str) -> bool:
    """Whether verifier code asks SQLite for the wall clock (``'now'``, ``CURRENT_TIMESTAMP``).

    Seed data is frozen to the reference time on import, but a verifier runs against
    the real clock, so such a verifier can pass today and fail next month; import
    cannot rewrite code safely, it reports it."""
    return _CLOCK_READ.search(code) is not None


def convert(
    sc: OfficialScenario, reference: datetime
) -> tuple[dict[str, str], list[ImportProblem], dict[str, int]]:
    """The bundle files for one scenario, notes about what was repaired or skipped, and counts
    (:data:`COUNT_KEYS`: tasks, verifiers by mode, inserts kept/dropped/repaired, DDL repairs)."""
    if not sc.full_code:
        raise ImportFailure("envs", "no tool code (full_code) in gen_envs.jsonl")
    if not sc.tasks and not sc.awm_tasks:
        raise ImportFailure("tasks", "no tasks in gen_tasks.jsonl")
    counts = dict.fromkeys(COUNT_KEYS, 0)
    schema_sql, notes = _schema_sql(sc, reference, counts)
    seed_sql, seed_notes = _seed_sql(sc, schema_sql, reference, counts)
    task_count = len(sc.awm_tasks) if sc.awm_tasks is not None else len(sc.tasks)
    factories: dict[int, str] = {}
    chosen, verifier_notes = _choose_verifiers(sc, task_count, counts, factories)
    verifier_names = {idx: name for idx, (name, _) in chosen.items()}
    notes += seed_notes + sc.notes + verifier_notes
    counts["duplicate_verifier_rows"] = sc.duplicate_rows
    if sc.awm_tasks is not None:
        tasks = _awm_tasks(sc, verifier_names)
        ids = {i: t.id for i, t in enumerate(tasks)}
    else:
        tasks = _release_tasks(sc, verifier_names, notes)
        ids = {int(t.id.removeprefix("task_")): t.id for t in tasks}
    # the release's rows as they were, by task id, for the export to write back unchanged
    kept_rows = {ids[idx]: rows for idx, rows in sc.rows.items() if idx in ids}
    verifiers_py = verifiers_module(chosen, kept_rows, factories)
    counts["tasks"] = len(tasks)
    counts["tasks_without_verifier"] = sum(t.verifier is None for t in tasks)
    counts["tasks_with_reference"] = sum(t.reference_solution is not None for t in tasks)
    files = {
        "manifest.json": _manifest(sc, reference).model_dump_json(indent=2) + "\n",
        "schema.sql": schema_sql,
        "seed.sql": seed_sql,
        "app.py": rewrite_app(sc.full_code),
        "tasks.json": json.dumps(
            [t.model_dump(mode="json", exclude_defaults=True) for t in tasks], indent=2
        )
        + "\n",
        "verifiers.py": verifiers_py,
    }
    return files, notes, counts
