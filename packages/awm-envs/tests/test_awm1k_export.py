"""Exporting to the AWM-1K layout in the shape the official code and OpenEnv accept.

The official package itself is exercised by test_interop_official.py (the ``interop``
nox session); these tests pin the shape it depends on, without it.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from awm_envs import load_environment
from awm_envs.awm1k.export import export_awm
from awm_envs.awm1k.official_code import official_type, response_map
from awm_envs.validation.validate import resolve_env_dir

ENVS = ("shop", "bank")


def _rows(folder: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export")
    export_awm([resolve_env_dir(e) for e in ENVS], out)
    return out


def _first_verify_def(code: str) -> ast.FunctionDef:
    tree = ast.parse(code)
    return next(
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("verify_")
    )


def test_full_code_survives_a_prepended_line_and_has_the_official_main_block(exported) -> None:
    for row in _rows(exported, "gen_envs.jsonl"):
        code = row["full_code"]
        assert "from __future__" not in code
        compile("import warnings\n" + code, row["scenario"], "exec")  # what the patcher does
        lines = code.splitlines()
        main = next(i for i, line in enumerate(lines) if line.startswith("if __name__ =="))
        run = [line for line in lines[main:] if "uvicorn.run(app" in line]
        assert run == ["    uvicorn.run(app, host=host, port=port)"]
        assert 'os.environ.get("PORT"' in code and 'os.environ.get("HOST"' in code


def test_create_engine_is_one_line_and_honours_database_path(exported, tmp_path: Path) -> None:
    row = next(r for r in _rows(exported, "gen_envs.jsonl") if r["scenario"] == "shop")
    engine_lines = [line for line in row["full_code"].splitlines() if "create_engine(" in line]
    assert engine_lines and all(line.count("(") == line.count(")") for line in engine_lines)
    db = tmp_path / "mine.db"
    os.environ["DATABASE_PATH"] = f"sqlite:///{db}"
    try:
        module = types.ModuleType("awm_test_exported_shop")
        sys.modules[module.__name__] = module  # SQLAlchemy resolves annotations through it
        exec(compile(row["full_code"], "shop", "exec"), module.__dict__)
        session = next(module.get_db())
        assert str(session.get_bind().url) == f"sqlite:///{db}"
    finally:
        del os.environ["DATABASE_PATH"]
        sys.modules.pop("awm_test_exported_shop", None)


def test_official_db_paths(exported) -> None:
    for name in ("gen_db.jsonl", "gen_envs.jsonl"):
        for row in _rows(exported, name):
            assert row["db_path"] == f"./outputs/databases/{row['scenario']}.db"


def test_each_verifier_row_is_self_contained_and_starts_with_the_official_entry(exported) -> None:
    for name, function, params in (
        ("gen_verifier.pure_code.jsonl", "verify_task_completion", 3),
        ("gen_verifier.jsonl", "verify_task", 2),
    ):
        rows = _rows(exported, name)
        tasks = sum(len(load_environment(e).tasks) for e in ENVS)  # one row per task
        assert len(rows) == tasks and len({(r["scenario"], r["task_idx"]) for r in rows}) == tasks
        for row in rows:
            code = row["verification"]["code"]
            assert "__future__" not in code
            first = _first_verify_def(code)
            assert first.name == function and len(first.args.args) == params
            exec(compile(code, "row", "exec"), {})  # alone, as the official runner does


def _replay_files(tmp_path: Path, env_id: str, task_index: int) -> tuple[Path, Path, Any]:
    from awm_envs.runtime.environment import load_environment

    env = load_environment(resolve_env_dir(env_id))
    task = env.tasks[task_index]
    inst = env.instance()
    initial_image = inst.snapshot_sync()
    for step in task.reference_solution or []:
        assert not inst.call_tool_sync(step.tool, step.arguments).is_error
    paths = []
    for label, image in (("initial", initial_image), ("final", inst.snapshot_sync())):
        conn = sqlite3.connect(":memory:")
        conn.deserialize(image)
        target = sqlite3.connect(tmp_path / f"{label}.db")
        conn.backup(target)
        target.close()
        paths.append(tmp_path / f"{label}.db")
    inst.close_sync()
    return paths[0], paths[1], task


def test_code_row_decides_on_database_files_called_by_keyword(exported, tmp_path: Path) -> None:
    initial, final, task = _replay_files(tmp_path, "bank", 4)
    row = next(
        r
        for r in _rows(exported, "gen_verifier.pure_code.jsonl")
        if r["scenario"] == "bank" and r["task_idx"] == 4
    )
    namespace: dict[str, Any] = {"sqlite3": sqlite3, "json": json}
    exec(row["verification"]["code"], namespace)
    verify = namespace["verify_task_completion"]
    answer = task.reference_answer
    done = verify(initial_db_path=str(initial), final_db_path=str(final), final_answer=answer)
    before = verify(initial_db_path=str(initial), final_db_path=str(initial), final_answer=answer)
    assert (done["result"], before["result"]) == ("complete", "others")
    sql_row = next(
        r
        for r in _rows(exported, "gen_verifier.jsonl")
        if r["scenario"] == "bank" and r["task_idx"] == 4
    )
    exec(sql_row["verification"]["code"], namespace)
    evidence = namespace["verify_task"](initial_db_path=str(initial), final_db_path=str(final))
    assert "evidence" in evidence and json.dumps(evidence)


def test_spec_has_parameter_locations_official_types_field_maps_and_tags(exported) -> None:
    endpoints = {
        ep["operation_id"]: ep
        for row in _rows(exported, "gen_spec.jsonl")
        if row["scenario"] == "shop"
        for group in row["api_spec"]["api_groups"]
        for ep in group["endpoints"]
    }
    assert all(ep["tags"] for ep in endpoints.values())
    cancel = endpoints["cancel_order"]
    assert cancel["request_params"]["order_id"]["param_type"] == "path"
    assert cancel["request_params"]["order_id"]["required"] is True
    search = endpoints["search_products"]["request_params"]
    assert search["category_id"] == {
        **search["category_id"],
        "type": "integer",
        "param_type": "query",
    }
    assert endpoints["add_address"]["request_params"]["label"]["param_type"] == "body"
    response = endpoints["add_address"]["response"]
    assert response["address_id"]["type"] == "integer" and "$ref" not in json.dumps(response)
    types = {p["type"] for ep in endpoints.values() for p in ep["request_params"].values()}
    assert types <= {"string", "integer", "float", "boolean", "array", "object"}


def test_json_schema_types_map_to_the_release_names() -> None:
    nullable_int = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert official_type(nullable_int) == "integer"
    assert official_type({"type": "number"}) == "float"
    listing = {
        "$defs": {"Item": {"properties": {"n": {"type": "integer", "description": "count"}}}},
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    }
    mapped = response_map(listing)
    assert mapped["items"]["type"] == "array"
    assert mapped["items"]["items"]["n"] == {
        "type": "integer",
        "description": "count",
        "example": None,
    }


def _schema_of(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """Every table, index, trigger and view with its normalised SQL, as SQLite stores it."""
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master "
        "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    return [(t, n, tbl, " ".join((sql or "").split())) for t, n, tbl, sql in rows]


@pytest.mark.parametrize("env_id", ENVS)
def test_the_exported_schema_builds_the_bundle_s_schema_exactly(exported, env_id: str) -> None:
    """Tables, indexes and constraints survive the export: a database built from
    gen_db.jsonl as the official pipeline builds it has the bundle's own schema."""
    (row,) = [r for r in _rows(exported, "gen_db.jsonl") if r["scenario"] == env_id]
    built = sqlite3.connect(":memory:")
    for table in row["db_schema"]["tables"]:
        built.execute(table["ddl"])
        for index in table["indexes"]:
            built.execute(index)
    bundle = sqlite3.connect(":memory:")
    bundle.executescript((resolve_env_dir(env_id) / "schema.sql").read_text())
    want = _schema_of(bundle)
    assert any(t == "index" for t, *_ in want), "the bundle declares indexes: they must be compared"
    assert _schema_of(built) == want
