"""Export awm bundles in the official AWM-1K release layout (one JSONL line per scenario per file).

Full task objects ride along in ``gen_tasks.jsonl`` (``awm_tasks``) so that a
re-import (:mod:`awm_envs.awm1k.importer`) keeps reference solutions; official
readers ignore the extra key. Native verifiers are exported behind the official
``verify_task_completion`` signature.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.models import ToolSpec
from awm_envs.awm1k.read import FILES
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

_EXPORT_WRAPPER = '''

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    """Exported by awm: the native verifier {name!r} behind the official signature."""
    import sqlite3

    initial = sqlite3.connect(f"file:{{initial_db_path}}?mode=ro", uri=True)
    final = sqlite3.connect(f"file:{{final_db_path}}?mode=ro", uri=True)
    try:
        out = {name}(initial, final, final_answer)
    finally:
        initial.close()
        final.close()
    return {{"result": "complete" if out.get("complete") else "others", "evidence": out.get("evidence")}}
'''


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
        "db_path": f"{name}.db",
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


def _endpoint(tool: ToolSpec) -> dict[str, Any]:
    props = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    return {
        "path": tool.path or f"/{tool.name}",
        "method": (tool.method or "POST").upper(),
        "summary": tool.description.split("\n")[0],
        "description": tool.description,
        "operation_id": tool.name,
        "tags": tool.tags,
        "request_params": {
            p: {
                "type": s.get("type", "string"),
                "param_type": "query" if (tool.method or "").upper() == "GET" else "body",
                "required": p in required,
                "description": s.get("description", ""),
                "example": s.get("example"),
            }
            for p, s in props.items()
        },
        "response": tool.output_schema or {},
        "required_tables": [],
        "required_fields": [],
    }


def _spec_row(bundle: Bundle) -> dict[str, Any]:
    name = bundle.manifest.id
    endpoints = [_endpoint(tool) for tool in bundle.tools]
    return {
        "scenario": name,
        "api_spec": {"api_groups": [{"group_name": name, "endpoints": endpoints}]},
    }


def _verifier_rows(bundle: Bundle) -> list[dict[str, Any]]:
    verifiers_src = (
        (bundle.path / "verifiers.py").read_text()
        if (bundle.path / "verifiers.py").is_file()
        else ""
    )
    rows: list[dict[str, Any]] = []
    for idx, task in enumerate(bundle.tasks):
        if task.verifier:
            code = verifiers_src + _EXPORT_WRAPPER.format(name=task.verifier)
            rows.append(
                {
                    "scenario": bundle.manifest.id,
                    "task_idx": idx,
                    "task": task.instruction,
                    "verification": {"code": code},
                }
            )
    return rows


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
                "db_path": f"{name}.db",
                "full_code": (bundle.path / "app.py").read_text(),
            }
        )
        lines["verifier_code"].extend(_verifier_rows(bundle))
    for kind, rows in lines.items():
        if rows:
            with open(out / FILES[kind], "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row) + "\n")
    return {FILES[k]: len(v) for k, v in lines.items() if v}
