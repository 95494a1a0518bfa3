"""The AWM-1K round trip: what comes in through ``import-awm`` goes back out unchanged.

* export(import(export(B))) equals export(B) byte for byte (here shop and bank; every
  catalog bundle in the slow test), and a second round trip changes nothing;
* an official-style scenario (``SessionLocal()`` in its endpoints) imports into a
  self-contained bundle and exports to tool code that runs on its own database file,
  with the release's verifier rows written back as they were;
* bundles and rows from before (an ``awm_envs`` import in app.py, ``None`` for
  ``uvicorn.run``, verifiers wrapped again on every trip) are repaired on the way;
* exported rows carry ``verification.raw_response`` with the task's criteria, imported
  tasks get theirs from it, and duplicate verifier rows are reported per task.

The official package itself replays an imported-then-exported release in
test_interop_official.py (``nox -s interop``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sqlite3
import sys
import types
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from awm_envs.awm1k.convert import convert
from awm_envs.awm1k.export import export_awm
from awm_envs.awm1k.importer import import_awm
from awm_envs.awm1k.official_code import official_full_code, verifier_row_code
from awm_envs.awm1k.read import read_release
from awm_envs.awm1k.repair import IN_MEMORY_ENGINE, LEGACY_SHIM, replace_calls, rewrite_app
from awm_envs.awm1k.verifier_code import (
    detect,
    legacy_original,
    release_rows,
    unwrap_row,
    verifiers_module,
)
from awm_envs.validation.validate import catalog_env_ids, resolve_env_dir

FIXTURES = Path(__file__).parent / "fixtures" / "awm1k"
REF = datetime(2025, 6, 1, 12, 0, 0)


def _make_release_module() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(
        "awm1k_make_release", FIXTURES / "make_release.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_release_module()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("gen_*.jsonl"))}


def _rows(folder: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def _awm_imports(code: str) -> list[str]:
    """Every module an ``import`` in ``code`` names that is awm's own."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0].startswith("awm")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("awm"):
            found.append(str(node.module))
    return found


def _round_trips(root: Path, bundles: list[Path]) -> dict[str, Any]:
    """export → import → export → import → export, each step in its own folder."""
    export_awm(bundles, root / "e1")
    first, _ = import_awm(root / "e1", root / "i1", reference_time=REF, workers=2)
    assert all(r.status == "imported" for r in first), [r.problems for r in first]
    names = [b.name for b in bundles]  # the first export's order
    export_awm([root / "i1" / n for n in names], root / "e2")
    second, _ = import_awm(root / "e2", root / "i2", reference_time=REF, workers=2)
    assert all(r.status == "imported" for r in second), [r.problems for r in second]
    export_awm([root / "i2" / n for n in names], root / "e3")
    return {"root": root, "names": names, "first": first}


@pytest.fixture(scope="module")
def trip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("trip")
    return _round_trips(root, [resolve_env_dir(e) for e in ("shop", "bank")])


def test_export_import_export_is_byte_identical(trip) -> None:
    root = trip["root"]
    first, again = _files(root / "e1"), _files(root / "e2")
    assert sorted(first) == sorted(again) and len(first) == 8
    assert {n for n in first if first[n] != again[n]} == set()


def test_a_second_round_trip_changes_nothing_and_nothing_grows(trip) -> None:
    root = trip["root"]
    assert _files(root / "e3") == _files(root / "e2")
    for name in trip["names"]:
        for file in ("app.py", "verifiers.py", "tasks.json", "schema.sql", "seed.sql"):
            assert (root / "i2" / name / file).read_bytes() == (
                root / "i1" / name / file
            ).read_bytes(), (name, file)


def test_no_awm_import_in_any_imported_or_exported_file(trip) -> None:
    root = trip["root"]
    for name in trip["names"]:
        for file in ("app.py", "verifiers.py"):
            text = (root / "i1" / name / file).read_text()
            assert not _awm_imports(text) and "awm_envs" not in text, (name, file)
    for folder in ("e1", "e2"):
        for row in _rows(root / folder, "gen_envs.jsonl"):
            assert not _awm_imports(row["full_code"]) and "awm_envs" not in row["full_code"]
        for file in ("gen_verifier.jsonl", "gen_verifier.pure_code.jsonl"):
            for row in _rows(root / folder, file):
                assert not _awm_imports(row["verification"]["code"])


def test_each_imported_verifier_is_wrapped_once_and_keeps_its_rows(trip) -> None:
    from awm_envs.bundle.loader import load_bundle

    root = trip["root"]
    exported = {
        (r["scenario"], r["task_idx"], file): r["verification"]
        for file in ("gen_verifier.jsonl", "gen_verifier.pure_code.jsonl")
        for r in _rows(root / "e1", file)
    }
    for name in trip["names"]:
        bundle = load_bundle(root / "i1" / name)
        source = (bundle.path / "verifiers.py").read_text()
        kept = release_rows(source)
        assert source.count("def _awm_official_") == len(bundle.tasks)
        for idx, task in enumerate(bundle.tasks):
            assert kept[task.id] == {
                "verifier_code": exported[(name, idx, "gen_verifier.pure_code.jsonl")],
                "verifier_sql": exported[(name, idx, "gen_verifier.jsonl")],
            }


def test_sql_rows_give_openenvs_judge_the_task_criteria(trip) -> None:
    """OpenEnv's port reads ``json.loads(verification["raw_response"])`` for an sql-mode
    row and hands its judge ``reasoning``, ``success_criteria``, ``failure_criteria``."""
    from awm_envs.bundle.loader import load_bundle

    root = trip["root"]
    for file, function in (
        ("gen_verifier.jsonl", "verify_task"),
        ("gen_verifier.pure_code.jsonl", "verify_task_completion"),
    ):
        for row in _rows(root / "e1", file):
            task = load_bundle(resolve_env_dir(row["scenario"])).tasks[row["task_idx"]]
            reply = json.loads(row["verification"].get("raw_response", "{}"))
            assert reply["function_name"] == function
            assert reply["success_criteria"] == "\n".join(task.success_criteria) != ""
            assert reply["failure_criteria"] == "\n".join(task.failure_criteria)
            assert task.verifier in reply["reasoning"]
            if task.reference_answer:
                assert task.reference_answer in reply["reasoning"]


def test_release_criteria_become_the_imported_tasks_criteria(tmp_path: Path) -> None:
    rows = MAKE.rows()
    for row in rows["gen_verifier.jsonl"]:
        row["verification"]["raw_response"] = json.dumps(
            {
                "reasoning": "The titles by O'Brien in the final database.",
                "python_code": row["verification"]["code"],
                "function_name": "verify_task",
                "success_criteria": "The list holds The Hitchhiker's Guide.\nNothing changes.",
                "failure_criteria": "Any other title.",
            }
        )
    release = _write_release(tmp_path / "release", rows)
    scenarios, _ = read_release(release)
    files, _, _ = convert(scenarios["library_3"], REF)
    tasks = {t["id"]: t for t in json.loads(files["tasks.json"])}
    assert tasks["task_1"]["success_criteria"] == [
        "The list holds The Hitchhiker's Guide.",
        "Nothing changes.",
    ]
    assert tasks["task_1"]["failure_criteria"] == ["Any other title."]
    assert "success_criteria" not in tasks["task_0"]  # its row has no raw_response


def _write_release(folder: Path, rows: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for file, lines in rows.items():
        (folder / file).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


# --------------------------------------------------------------------------- official-style code


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The hand-made release's library_3 (SessionLocal() in every endpoint, a multi-line
    create_engine, duplicate verifier rows) imported, exported, imported, exported."""
    root = tmp_path_factory.mktemp("library")
    release = MAKE.write_release(root / "x")
    results, _ = import_awm(release, root / "i1", reference_time=REF, workers=1, only=["library_3"])
    (result,) = results
    assert result.status == "imported", result.problems
    export_awm([root / "i1" / "library_3"], root / "e1")
    again, _ = import_awm(root / "e1", root / "i2", reference_time=REF, workers=1)
    assert [r.status for r in again] == ["imported"], again[0].problems
    export_awm([root / "i2" / "library_3"], root / "e2")
    return {"root": root, "result": result}


def test_imported_official_app_is_self_contained_and_isolated(library) -> None:
    from awm_envs.runtime.environment import load_environment

    app = (library["root"] / "i1" / "library_3" / "app.py").read_text()
    assert not _awm_imports(app) and "awm_envs" not in app
    assert app.count("def _awm_session_shim(") == 1
    env = load_environment(library["root"] / "i1" / "library_3")
    a, b = env.instance(), env.instance()
    assert not a.call_tool_sync("borrow_book", {"book_id": 2}).is_error
    assert a.call_tool_sync("borrow_book", {"book_id": 2}).is_error  # sold out in a only
    assert b.call_tool_sync("search_books", {"q": "Hitchhiker"}).content[0]["copies"] == 1


def test_exported_official_app_runs_on_its_own_database_file(library, tmp_path: Path) -> None:
    """What the official server does with full_code, short of starting uvicorn: build the
    database from gen_db/gen_sample, point DATABASE_PATH at it, import the code, call."""
    from fastapi.testclient import TestClient

    e1 = library["root"] / "e1"
    (env_row,) = _rows(e1, "gen_envs.jsonl")
    code = env_row["full_code"]
    assert not _awm_imports(code) and "_awm_session_shim" not in code
    main = code[code.index('if __name__ == "__main__":') :].splitlines()
    assert "    uvicorn.run(app, host=host, port=port)" in main
    assert all(
        line.count("(") == line.count(")") for line in code.splitlines() if "create_engine(" in line
    )
    db = tmp_path / "library_3.db"
    conn = sqlite3.connect(db)
    for table in _rows(e1, "gen_db.jsonl")[0]["db_schema"]["tables"]:
        conn.execute(table["ddl"])
    for table in _rows(e1, "gen_sample.jsonl")[0]["sample_data"]["tables"]:
        for stmt in table["insert_statements"]:
            conn.execute(stmt)
    conn.commit()
    conn.close()
    initial = tmp_path / "initial.db"
    initial.write_bytes(db.read_bytes())
    os.environ["DATABASE_PATH"] = f"sqlite:///{db}"
    module = types.ModuleType("awm_test_exported_library")
    sys.modules[module.__name__] = module
    try:
        exec(compile("import warnings\n" + code, "full_code", "exec"), module.__dict__)
        client = TestClient(module.app)
        assert client.post("/loans", json={"book_id": 2}).status_code == 200
        assert client.post("/loans", json={"book_id": 2}).status_code == 404  # sold out
    finally:
        del os.environ["DATABASE_PATH"]
        sys.modules.pop(module.__name__, None)
    (code_row,) = _rows(e1, "gen_verifier.pure_code.jsonl")
    namespace: dict[str, Any] = {}
    exec(code_row["verification"]["code"], namespace)
    verify = namespace["verify_task_completion"]
    assert verify(str(initial), str(db))["result"] == "complete"
    assert verify(str(initial), str(initial))["result"] == "others"


def test_the_releases_rows_go_back_out_as_they_were(library) -> None:
    rows = MAKE.rows()
    e1 = library["root"] / "e1"
    (code_row,) = _rows(e1, "gen_verifier.pure_code.jsonl")
    (sql_row,) = _rows(e1, "gen_verifier.jsonl")
    # the first usable row of each file (the first code-mode row does not parse)
    assert code_row["verification"] == rows["gen_verifier.pure_code.jsonl"][1]["verification"]
    assert sql_row["verification"] == rows["gen_verifier.jsonl"][0]["verification"]
    assert (code_row["task_idx"], sql_row["task_idx"]) == (0, 1)


def test_the_official_style_round_trip_is_stable(library) -> None:
    root = library["root"]
    assert _files(root / "e2") == _files(root / "e1")
    for file in ("app.py", "verifiers.py"):
        assert (root / "i2" / "library_3" / file).read_bytes() == (
            root / "i1" / "library_3" / file
        ).read_bytes()


def test_duplicate_verifier_rows_are_reported_per_task(library) -> None:
    result = library["result"]
    messages = [p.message for p in result.problems]
    assert (
        "task 0: 3 rows in gen_verifier.pure_code.jsonl (differing); the first usable one is kept"
        in messages
    )
    assert (
        "task 1: 2 rows in gen_verifier.jsonl (identical); the first usable one is kept" in messages
    )
    assert all(not p.fatal for p in result.problems)
    assert result.counts["duplicate_verifier_rows"] == 3


# --------------------------------------------------------------------------- earlier imports


def _legacy_app(code: str, times: int = 1) -> str:
    """What import-awm wrote before the shim was inlined (and each old round trip added)."""
    code = replace_calls(code, "create_engine", lambda _: IN_MEMORY_ENGINE)
    code = replace_calls(code, "uvicorn.run", lambda _: "None")
    for _ in range(times):
        code = code.rstrip() + "\n" + LEGACY_SHIM
    return code


@pytest.mark.parametrize("times", [1, 3])
def test_a_legacy_imported_app_exports_clean_and_reimports_self_contained(times: int) -> None:
    legacy = _legacy_app(MAKE.LIBRARY_CODE, times)
    out = official_full_code(legacy, "library_3")
    assert "awm_envs" not in out and "_awm_install_session_shim" not in out
    main = out[out.index('if __name__ == "__main__":') :].splitlines()
    assert [line for line in main if "uvicorn.run(app" in line] == ["    uvicorn.run(app)"]
    assert "None" not in [line.strip() for line in main]
    compile("import warnings\n" + out, "full_code", "exec")
    again = rewrite_app(legacy)
    assert "awm_envs" not in again and again.count("def _awm_session_shim(") == 1


def _ast(code: str) -> str:
    return ast.dump(ast.parse(code))


def test_rows_wrapped_again_by_older_exports_are_unwrapped() -> None:
    """Before the rows were kept, each import → export wrapped a verifier once more
    (4.6 → 8.6 → 12.8 KB); such rows import as the official code inside."""
    original = MAKE.CODE_VERIFIER
    layers = [original]
    for _ in range(3):  # the old import (factory) then the old export (official wrapper)
        found = detect(layers[-1])
        assert found is not None
        module = verifiers_module({0: ("verify_task_0", found)})
        layers.append(verifier_row_code(module, "verify_task_0", "code"))
    assert len(layers[1]) < len(layers[2]) < len(layers[3])
    for layer in layers[1:]:
        assert _ast(unwrap_row(layer)) == _ast(original)
    assert unwrap_row(original) == original
    legacy_module = verifiers_module({0: ("verify_task_0", detect(original))})  # type: ignore[dict-item]
    code, mode = legacy_original(legacy_module, "verify_task_0") or ("", "")
    assert mode == "code" and _ast(code) == _ast(original)


def test_the_reader_unwraps_a_legacy_row_and_says_so(tmp_path: Path) -> None:
    found = detect(MAKE.CODE_VERIFIER)
    assert found is not None
    module = verifiers_module({0: ("verify_task_0", found)})
    wrapped = verifier_row_code(module, "verify_task_0", "code")
    rows = MAKE.rows()
    rows["gen_verifier.pure_code.jsonl"] = [
        {"scenario": "library_3", "task_idx": 0, "task": "x", "verification": {"code": wrapped}}
    ]
    scenarios, _ = read_release(_write_release(tmp_path / "release", rows))
    lib = scenarios["library_3"]
    assert _ast(lib.rows[0]["verifier_code"]["code"]) == _ast(MAKE.CODE_VERIFIER)
    assert lib.verifiers[0].mode == "code" and "_awm_run" not in lib.verifiers[0].code
    assert any("unwrapped" in n.message and n.message.startswith("task 0:") for n in lib.notes)


def test_a_legacy_imported_bundle_exports_its_official_code(tmp_path: Path) -> None:
    """A bundle imported before the rows were kept: its verifier goes out unwrapped, in
    its own mode's file, and its app without awm's import."""
    release = MAKE.write_release(tmp_path / "x")
    import_awm(release, tmp_path / "i", reference_time=REF, workers=1, only=["library_3"])
    bundle = tmp_path / "i" / "library_3"
    scenarios, _ = read_release(release)
    lib = scenarios["library_3"]
    old = {idx: (f"verify_task_{idx}", v) for idx, v in lib.verifiers.items()}
    (bundle / "verifiers.py").write_text(verifiers_module(old))  # no rows kept
    (bundle / "app.py").write_text(_legacy_app(MAKE.LIBRARY_CODE))
    export_awm([bundle], tmp_path / "e")
    (code_row,) = _rows(tmp_path / "e", "gen_verifier.pure_code.jsonl")
    (sql_row,) = _rows(tmp_path / "e", "gen_verifier.jsonl")
    assert _ast(code_row["verification"]["code"]) == _ast(MAKE.CODE_VERIFIER)
    assert _ast(sql_row["verification"]["code"]) == _ast(MAKE.SQL_VERIFIER)
    assert json.loads(sql_row["verification"]["raw_response"])["function_name"] == "verify_task"
    (env_row,) = _rows(tmp_path / "e", "gen_envs.jsonl")
    assert "awm_envs" not in env_row["full_code"]


# --------------------------------------------------------------------------- the whole catalog


def test_catalog_apps_survive_import_and_export_as_text() -> None:
    """For every catalog app, the export's full_code imported and exported again is the
    same text (the part of the round trip that needs no worker process)."""
    for env_id in catalog_env_ids():
        full = official_full_code((resolve_env_dir(env_id) / "app.py").read_text(), env_id)
        imported = rewrite_app(full)
        assert "awm_envs" not in imported and imported.count("def _awm_session_shim(") == 1
        assert official_full_code(imported, env_id) == full, env_id


@pytest.mark.slow
def test_every_catalog_bundle_round_trips_byte_for_byte(tmp_path: Path) -> None:
    trip = _round_trips(tmp_path, [resolve_env_dir(e) for e in catalog_env_ids()])
    assert sorted(trip["names"]) == sorted(catalog_env_ids())
    first, again, third = (_files(tmp_path / f) for f in ("e1", "e2", "e3"))
    assert {n for n in first if first[n] != again[n]} == set()
    assert third == again


@pytest.mark.slow
def test_an_official_layout_release_round_trips(tmp_path: Path) -> None:
    """The catalog's export without awm's extra key (an official-layout release: no
    reference solutions) comes back out with every official file unchanged."""
    envs = ("shop", "tickets", "travel")
    export_awm([resolve_env_dir(e) for e in envs], tmp_path / "awm")
    official = tmp_path / "official"
    official.mkdir()
    for path in (tmp_path / "awm").iterdir():
        lines = path.read_text().splitlines()
        if path.name == "gen_tasks.jsonl":
            lines = [
                json.dumps({k: v for k, v in json.loads(line).items() if k != "awm_tasks"})
                for line in lines
            ]
        (official / path.name).write_text("".join(line + "\n" for line in lines))
    results, _ = import_awm(official, tmp_path / "i", reference_time=REF, workers=2)
    assert all(r.status == "imported" for r in results)
    export_awm([tmp_path / "i" / e for e in envs], tmp_path / "e")
    before, after = _files(official), _files(tmp_path / "e")
    assert {n for n in before if before[n] != after[n]} == {"gen_tasks.jsonl"}
    for old, new in zip(
        _rows(official, "gen_tasks.jsonl"), _rows(tmp_path / "e", "gen_tasks.jsonl"), strict=True
    ):
        assert new["tasks"] == old["tasks"] and new["scenario"] == old["scenario"]
        # the criteria came back from the rows' raw_response
        assert all(t["success_criteria"] for t in new["awm_tasks"])


def test_a_verifier_failure_names_the_verifier_even_when_the_result_does_not() -> None:
    from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult
    from awm_envs.validation.runner import VerifierRunner

    def verify(function: str, initial: bytes, final: bytes, answer: str | None) -> VerifierResult:
        error = VerifierError(kind=VerifierErrorKind.EXCEPTION, message="boom")
        return VerifierResult(function="", signature="native", error=error)

    runner = VerifierRunner(verify, sandboxed=True)
    message = runner.failure(runner("verify_task_3", b"", b"", None))
    assert message == "verify_task_3 failed in the sandbox (exception): boom"
    unnamed = runner.failure(runner("", b"", b"", None))
    assert unnamed is not None and not unnamed.startswith(" ") and "boom" in unnamed
