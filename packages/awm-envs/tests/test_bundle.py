"""Bundle loading: validation names every problem's file and field; the template is compiled once."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from awm_envs import BundleError, load_bundle
from awm_envs.bundle.loader import bundle_layout_schema


def _problems(path: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(BundleError) as info:
        load_bundle(path)
    return [(p.file, p.field, p.message) for p in info.value.problems]


def test_library_fixture_loads_with_derived_tools(library_path: Path) -> None:
    bundle = load_bundle(library_path)
    assert bundle.id == "library"
    assert [t.name for t in bundle.tools][:3] == ["get_current_time", "search_books", "get_book"]
    checkout = bundle.tool("checkout_copy")
    assert checkout is not None
    assert checkout.input_schema["required"] == ["copy_id"]
    assert checkout.input_schema["additionalProperties"] is False
    assert checkout.method == "POST" and checkout.path == "/loans"
    assert checkout.output_schema is not None and "LoanOut" in checkout.output_schema["$defs"]
    search = bundle.tool("search_books")
    assert search is not None and set(search.input_schema["properties"]) == {
        "q",
        "genre",
        "limit",
        "offset",
    }


def test_template_is_a_complete_sqlite_image(library_path: Path) -> None:
    bundle = load_bundle(library_path)
    conn = sqlite3.connect(":memory:")
    conn.deserialize(bundle.template)
    assert conn.execute("SELECT COUNT(*) FROM books").fetchone() == (6,)
    assert bundle.tables == ["authors", "books", "copies", "loans", "members", "reviews"]


def test_every_problem_is_reported_with_file_and_field(tmp_path: Path, library_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(library_path, bad)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["id"] = "Not Valid!"
    del manifest["reference_time"]
    (bad / "manifest.json").write_text(json.dumps(manifest))
    (bad / "schema.sql").write_text(
        (bad / "schema.sql").read_text() + "\nCREATE TABLE oops (id INTEGER PRIMARY KEY,;\n"
    )
    (bad / "seed.sql").write_text(
        (bad / "seed.sql").read_text()
        + "\nINSERT INTO loans (loan_id, copy_id, member_id, loaned_at, due_at) VALUES (9, 1, 77, datetime('now'), '2025-01-01');\n"
    )
    (bad / "app.py").write_text(
        (bad / "app.py").read_text()
        + '\n\n@app.get("/x")\ndef no_operation_id() -> dict:\n    return {}\n'
        + '\n\n@app.get("/y", operation_id="get_book")\ndef duplicate() -> dict:\n    return {}\n'
    )
    tasks = json.loads((bad / "tasks.json").read_text())
    tasks[0]["reference_solution"][0]["tool"] = "no_such_tool"
    tasks[1]["verifier"] = "verify_missing"
    tasks.append({"id": "broken", "complexity": "impossible"})
    (bad / "tasks.json").write_text(json.dumps(tasks))

    problems = _problems(bad)
    where = {(f, field) for f, field, _ in problems}
    assert ("manifest.json", "id") in where
    assert ("manifest.json", "reference_time") in where
    assert any(
        f == "schema.sql" and field.startswith("statement") and "line" in field
        for f, field, _ in problems
    )
    assert any(f == "seed.sql" and "wall clock" in msg for f, _, msg in problems)
    assert any(f == "seed.sql" and "foreign key" in msg.lower() for f, _, msg in problems)
    assert any(
        f == "app.py" and "route GET /x" in field and "operation_id" in msg
        for f, field, msg in problems
    )
    assert any(f == "app.py" and "also used by" in msg for f, _, msg in problems)
    assert ("tasks.json", "tasks.2.instruction") in where and (
        "tasks.json",
        "tasks.2.complexity",
    ) in where


def test_reference_tools_and_verifiers_are_checked(tmp_path: Path, library_path: Path) -> None:
    bad = tmp_path / "bad2"
    shutil.copytree(library_path, bad)
    tasks = json.loads((bad / "tasks.json").read_text())
    tasks[0]["reference_solution"][0]["tool"] = "no_such_tool"
    tasks[1]["verifier"] = "verify_missing"
    (bad / "tasks.json").write_text(json.dumps(tasks))
    where = {(f, field) for f, field, _ in _problems(bad)}
    assert ("tasks.json", "tasks.0.reference_solution.0.tool") in where
    assert ("tasks.json", "tasks.1.verifier") in where


def test_missing_files_and_import_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    files = {f for f, _, _ in _problems(tmp_path / "empty")}
    assert {"manifest.json", "schema.sql", "seed.sql", "app.py"} <= files


def test_app_import_failure_names_the_line(tmp_path: Path, library_path: Path) -> None:
    bad = tmp_path / "bad3"
    shutil.copytree(library_path, bad)
    (bad / "app.py").write_text("import os\n\nraise ValueError('generated code is broken')\n")
    problems = _problems(bad)
    assert ("app.py", "line 3") in {(f, field) for f, field, _ in problems}


def test_tools_json_must_match_routes(tmp_path: Path, library_path: Path) -> None:
    bad = tmp_path / "bad4"
    shutil.copytree(library_path, bad)
    (bad / "tools.json").write_text(
        json.dumps([{"name": "get_book"}, {"name": "teleport"}, {"name": "1bad"}])
    )
    where = {(f, field) for f, field, _ in _problems(bad)}
    assert ("tools.json", "tools.2.name") in where


def test_layout_schema_names_the_required_files() -> None:
    schema = bundle_layout_schema()
    assert set(schema["required"]) == {"manifest.json", "schema.sql", "seed.sql", "app.py"}
