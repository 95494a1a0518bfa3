"""Export awm bundles in the official AWM-1K release layout (one JSONL line per scenario per file).

Full task objects ride along in ``gen_tasks.jsonl`` (``awm_tasks``) so that a
re-import (:mod:`awm_envs.awm1k.importer`) keeps reference solutions; official
readers ignore the extra key. What the official code needs is made by
:mod:`awm_envs.awm1k.official_code`: tool code without ``__future__`` imports, with
a one-line ``create_engine`` honouring ``DATABASE_PATH`` and the official
``__main__`` uvicorn block; one self-contained verifier row per task and mode whose
first ``def verify_*`` is the official entry point, with a ``raw_response`` carrying
the task's criteria; the official ``db_path``; an API spec with parameter locations,
official types and response field maps.

A bundle that came in through ``import-awm`` goes back out as it came in: its app
without the session shim import wrote into it, and the release's own verifier rows
(kept in its ``verifiers.py``) instead of wrappers, so export(import(export(B)))
equals export(B) byte for byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_envs.awm1k.official_code import (
    official_endpoint,
    official_full_code,
    raw_response,
    verifier_row_code,
)
from awm_envs.awm1k.read import FILES
from awm_envs.awm1k.verifier_code import legacy_original, release_rows
from awm_envs.bundle.sqlscript import split_statements

if TYPE_CHECKING:
    from awm_envs.bundle.loader import Bundle


_CREATE_TABLE = re.compile(
    r'^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`\[]?(\w+)', re.IGNORECASE
)
_CREATE_INDEX = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\b.*?\bON\s+[\"`\[]?(\w+)", re.IGNORECASE | re.DOTALL
)
_INSERT = re.compile(r'^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+["`\[]?(\w+)', re.IGNORECASE)

OFFICIAL_DB_DIR = "./outputs/databases"


def official_db_path(scenario: str) -> str:
    """Where the official pipeline keeps a scenario's database (``gen_db``/``gen_envs``)."""
    return f"{OFFICIAL_DB_DIR}/{scenario}.db"


def _tasks_row(bundle: Bundle) -> dict[str, Any]:
    return {
        "scenario": bundle.manifest.id,
        "tasks": [t.instruction for t in bundle.tasks],
        "awm_tasks": [t.model_dump(mode="json", exclude={"verifier"}) for t in bundle.tasks],
    }


def _db_row(bundle: Bundle) -> dict[str, Any]:
    name = bundle.manifest.id
    tables: dict[str, dict[str, Any]] = {}
    for stmt in split_statements((bundle.path / "schema.sql").read_text()):
        if m := _CREATE_TABLE.match(stmt.sql):
            tables[m.group(1)] = {"name": m.group(1), "ddl": stmt.sql, "indexes": []}
        elif (m := _CREATE_INDEX.match(stmt.sql)) and m.group(1) in tables:
            tables[m.group(1)]["indexes"].append(stmt.sql)
    return {
        "scenario": name,
        "db_path": official_db_path(name),
        "db_schema": {"tables": list(tables.values())},
    }


def _sample_row(bundle: Bundle) -> dict[str, Any]:
    inserts: dict[str, list[str]] = {}
    for stmt in split_statements((bundle.path / "seed.sql").read_text()):
        table = m.group(1) if (m := _INSERT.match(stmt.sql)) else "_other"
        inserts.setdefault(table, []).append(stmt.sql)
    return {
        "scenario": bundle.manifest.id,
        "tables_count": len(inserts),
        "inserts_count": sum(len(v) for v in inserts.values()),
        "sample_data": {
            "tables": [
                {"table_name": t, "reasoning": "", "insert_statements": s}
                for t, s in inserts.items()
            ]
        },
    }


def _spec_row(bundle: Bundle) -> dict[str, Any]:
    from awm_envs.bundle.toolspecs import route_bindings

    name = bundle.manifest.id
    bindings = route_bindings(bundle.app)
    endpoints = []
    for tool in bundle.tools:
        _, _, path_params, query_params = bindings.get(
            tool.name, ("", "", frozenset(), frozenset())
        )
        endpoints.append(official_endpoint(tool, path_params, query_params))
    return {
        "scenario": name,
        "api_spec": {"api_groups": [{"group_name": name, "endpoints": endpoints}]},
    }


def _verifier_rows(bundle: Bundle) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of each official verifier file (code, sql), one per task and file.

    A task imported from a release gets the release's rows back as they were (kept in
    ``verifiers.py``, see :mod:`awm_envs.awm1k.verifier_code`); one imported before the
    rows were kept gets its official code unwrapped from the import's factory. Any other
    task gets one self-contained row per file wrapping its native verifier, with a
    ``raw_response`` that gives OpenEnv's sql-mode judge the task's criteria.
    """
    path = bundle.path / "verifiers.py"
    source = path.read_text() if path.is_file() else ""
    kept = release_rows(source)
    out: dict[str, list[dict[str, Any]]] = {"verifier_code": [], "verifier_sql": []}
    for idx, task in enumerate(bundle.tasks):
        base = {"scenario": bundle.manifest.id, "task_idx": idx, "task": task.instruction}
        if task.id in kept:
            for kind, verification in kept[task.id].items():
                if kind in out:
                    out[kind].append({**base, "verification": verification})
            continue
        if not task.verifier:
            continue
        legacy = legacy_original(source, task.verifier)
        if legacy is not None:
            code, mode = legacy
            row = {"code": code, "raw_response": raw_response(task, mode)}
            out["verifier_code" if mode == "code" else "verifier_sql"].append(
                {**base, "verification": row}
            )
            continue
        for mode, kind in (("code", "verifier_code"), ("sql", "verifier_sql")):
            code = verifier_row_code(source, task.verifier, mode)
            row = {"code": code, "raw_response": raw_response(task, mode, task.verifier)}
            out[kind].append({**base, "verification": row})
    return out["verifier_code"], out["verifier_sql"]


def export_awm(bundle_paths: list[Path], out: Path) -> dict[str, int]:
    """Write bundles in the official release layout (one line per scenario per file).

    Full task objects ride along in ``gen_tasks.jsonl`` (``awm_tasks``) so that a
    re-import keeps reference solutions; official readers ignore the extra key.
    """
    from awm_envs.bundle.loader import load_bundle

    out.mkdir(parents=True, exist_ok=True)
    lines: dict[str, list[dict[str, Any]]] = {k: [] for k in FILES}
    for path in bundle_paths:
        bundle = load_bundle(path)
        name = bundle.manifest.id
        lines["scenario"].append({"name": name, "description": bundle.manifest.description})
        lines["tasks"].append(_tasks_row(bundle))
        lines["db"].append(_db_row(bundle))
        lines["sample"].append(_sample_row(bundle))
        lines["spec"].append(_spec_row(bundle))
        lines["envs"].append(
            {
                "scenario": name,
                "db_path": official_db_path(name),
                "full_code": official_full_code((bundle.path / "app.py").read_text(), name),
            }
        )
        code_rows, sql_rows = _verifier_rows(bundle)
        lines["verifier_code"].extend(code_rows)
        lines["verifier_sql"].extend(sql_rows)
    for kind, rows in lines.items():
        if rows:
            with open(out / FILES[kind], "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row) + "\n")
    return {FILES[k]: len(v) for k, v in lines.items() if v}
