"""Importing AWM-1K: self-contained verifiers the sandbox runs, modes from functions,
DDL repair, per-scenario counts, and imported tasks reported unproven (not failed)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_envs.awm1k.importer import import_awm
from awm_envs.awm1k.read import read_release
from awm_envs.awm1k.repair import repair_parens
from awm_envs.awm1k.verifier_code import detect

FIXTURES = Path(__file__).parent / "fixtures" / "awm1k"
REF = datetime(2025, 6, 1, 12, 0, 0)


def _release_rows() -> dict[str, list[dict[str, Any]]]:
    spec = importlib.util.spec_from_file_location(
        "awm1k_make_release", FIXTURES / "make_release.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows: dict[str, list[dict[str, Any]]] = module.rows()
    return rows


def _write(folder: Path, rows: dict[str, list[dict[str, Any]]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in rows.items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def _library_only(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [
            r for r in lines if (r.get("scenario") or r.get("name")) in ("library_3", "Library 3")
        ]
        for name, lines in rows.items()
    }


HOSTILE_VERIFIER = """
import sqlite3

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    sqlite3.connect("/etc/passwd").execute("SELECT 1")
    return {"result": "complete"}
"""

PRESOLVED_VERIFIER = """
def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    return {"result": "complete"}
"""

# code mode in the "sql" file, with its own helper named like every other row's helper
CODE_IN_SQL_FILE = """
import os
import sqlite3
from sqlite3 import connect

LIMIT = 0

def _count(path):
    assert os.path.exists(path)
    conn = connect(path)
    n = conn.execute("SELECT COUNT(*) FROM loans").fetchone()[0]
    conn.close()
    return n

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    global LIMIT
    LIMIT = _count(initial_db_path)
    return {"result": "complete" if _count(final_db_path) > LIMIT else "others"}
"""


@pytest.fixture(scope="module")
def tricky(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """library_3 with: a code-mode row in gen_verifier.jsonl, a hostile verifier, a
    pre-solved task, and a table whose DDL lacks its closing parenthesis."""
    rows = _library_only(_release_rows())
    rows["gen_tasks.jsonl"] = [
        {
            "scenario": "library_3",
            "tasks": ["Borrow 'Dune'.", "List books.", "Read a file.", "Already done."],
        }
    ]
    rows["gen_verifier.pure_code.jsonl"] = [
        {
            "scenario": "library_3",
            "task_idx": 2,
            "task": "x",
            "verification": {"code": HOSTILE_VERIFIER},
        },
        {
            "scenario": "library_3",
            "task_idx": 3,
            "task": "x",
            "verification": {"code": PRESOLVED_VERIFIER},
        },
    ]
    sql_rows = rows["gen_verifier.jsonl"]
    sql_rows.append(
        {
            "scenario": "library_3",
            "task_idx": 0,
            "task": "x",
            "verification": {"code": CODE_IN_SQL_FILE},
        }
    )
    loans = rows["gen_db.jsonl"][0]["db_schema"]["tables"][1]
    loans["ddl"] = loans["ddl"].rstrip(")")  # the missing parenthesis, as in the release
    root = tmp_path_factory.mktemp("tricky")
    release = _write(root / "release", rows)
    results, _ = import_awm(release, root / "out", reference_time=REF, workers=1)
    assert [r.status for r in results] == ["imported"], results[0].problems
    return root / "out" / "library_3", {"result": results[0]}


def test_imported_verifiers_import_nothing_from_awm(tricky) -> None:
    bundle, _ = tricky
    tree = ast.parse((bundle / "verifiers.py").read_text())
    modules = {
        (n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert not any(m.startswith("awm") for m in modules), modules
    assert "awm_envs" not in (bundle / "verifiers.py").read_text()


def test_mode_comes_from_the_function_not_the_file() -> None:
    assert detect(CODE_IN_SQL_FILE).mode == "code"  # type: ignore[union-attr]
    assert detect("def verify_task(initial_db_path, final_db_path):\n    return {}\n").mode == "sql"  # type: ignore[union-attr]
    odd = detect("def verify_refund(a, b, final_answer=None):\n    return {}\n")
    assert odd is not None and (odd.function, odd.mode) == ("verify_refund", "code")
    assert detect("def helper(a):\n    return 1\n") is None
    assert detect("def verify_task_completion(:") is None


def test_code_mode_row_in_the_sql_file_attaches_and_decides(tricky) -> None:
    from awm_envs.runtime.environment import load_environment
    from awm_envs.verifiers.pool import VerifierPool

    bundle, _ = tricky
    env = load_environment(bundle)
    task = env.tasks[0]
    assert task.verifier == "verify_task_0"
    source = env.verifier_source
    assert source is not None
    with VerifierPool(size=1) as pool:
        inst = env.instance()
        initial = inst.snapshot_sync()
        assert not pool.run(source, initial=initial, final=initial, function=task.verifier).complete
        assert not inst.call_tool_sync("borrow_book", {"book_id": 1}).is_error
        outcome = pool.run(
            source, initial=initial, final=inst.snapshot_sync(), function=task.verifier
        )
        assert outcome.error is None and outcome.complete, outcome


def test_unbalanced_ddl_parenthesis_is_repaired_and_counted(tricky) -> None:
    bundle, info = tricky
    conn = sqlite3.connect(":memory:")
    conn.executescript((bundle / "schema.sql").read_text())
    assert conn.execute("SELECT COUNT(*) FROM loans").fetchone() == (0,)
    assert info["result"].counts["ddl_repaired"] == 1
    assert any("parenthesis" in p.message for p in info["result"].problems)


def test_paren_repair_refuses_what_is_ambiguous() -> None:
    def ok(sql: str) -> bool:
        try:
            sqlite3.connect(":memory:").execute(sql)
        except sqlite3.Error:
            return False
        return True

    assert repair_parens("CREATE TABLE t (a INT, b TEXT", ok) == "CREATE TABLE t (a INT, b TEXT)"
    assert repair_parens("CREATE TABLE t (a INT))", ok) == "CREATE TABLE t (a INT)"
    assert repair_parens("CREATE TABLE t ((a INT, b TEXT", ok) is None  # two missing
    assert repair_parens("CREATE TABLE t (a INT CHECK (a > 0, b INT", ok) is None


def test_per_scenario_counts_reach_the_json_report(tricky, tmp_path: Path) -> None:
    from awm_envs.cli.awm1k import import_awm_command

    rows = _release_rows()
    release = _write(tmp_path / "release", rows)
    out = CliRunner().invoke(
        import_awm_command,
        [str(release), "--out", str(tmp_path / "out"), "--json", "--workers", "1"],
    )
    report = json.loads(out.output)
    lib = next(r for r in report["results"] if r["scenario"] == "library_3")
    assert lib["counts"]["verifiers_code"] == 1 and lib["counts"]["verifiers_sql"] == 1
    assert lib["counts"]["inserts_quotes_repaired"] == 1 and lib["counts"]["tasks"] == 2
    assert report["counts"] == {"imported": 1, "skipped": 0, "failed": 2}
    assert report["totals"]["tasks"] == 2
    again = CliRunner().invoke(
        import_awm_command, [str(release), "--out", str(tmp_path / "out"), "--json"]
    )
    resumed = next(r for r in json.loads(again.output)["results"] if r["scenario"] == "library_3")
    assert resumed["status"] == "skipped" and resumed["counts"] == lib["counts"]


@pytest.fixture(scope="module")
def validated(tricky) -> Any:
    from awm_envs.validation.validate import validate_environment

    bundle, _ = tricky
    return {t.task_id: t for t in validate_environment(bundle).tasks}  # default: the sandbox


def test_imported_task_without_reference_is_unproven_not_failed(validated) -> None:
    # task_0's code-mode verifier decides; task_1's sql-mode one gathers evidence only, so
    # without a judge model its pre-solved check is left undecided (test_awm1k_sql_judge.py)
    for task_id, proof in (("task_0", "unproven"), ("task_1", "undecided")):
        t = validated[task_id]
        assert t.proof == proof and t.passed and not t.proven, t.problems
        assert [c.kind for c in t.checks] == ["initial"]


def test_hostile_imported_verifier_is_stopped_by_the_sandbox(validated) -> None:
    t = validated["task_2"]
    assert t.proof == "failed"
    assert "forbidden" in " ".join(t.problems) and "/etc/passwd" in " ".join(t.problems)


def test_presolved_task_fails_even_without_a_reference(validated) -> None:
    t = validated["task_3"]
    assert t.proof == "failed" and not t.initial_not_complete
    assert "already complete" in " ".join(t.problems)


def test_require_proof_fails_unproven_tasks(tricky) -> None:
    from awm_envs.validation.validate import validate_environment

    bundle, _ = tricky
    v = validate_environment(bundle, task_ids=["task_0"], require_proof=True)
    assert v.tasks[0].proof == "failed"
    assert "task has no reference_solution" in v.tasks[0].problems


def test_validate_cli_reports_unproven_and_exits_by_require_proof(tricky, tmp_path: Path) -> None:
    from awm_envs.cli.validate import validate_command

    rows = _library_only(_release_rows())
    release = _write(tmp_path / "release", rows)
    import_awm(release, tmp_path / "out", reference_time=REF, workers=1)
    bundle = str(tmp_path / "out" / "library_3")
    lenient = CliRunner().invoke(validate_command, [bundle])
    assert lenient.exit_code == 0, lenient.output
    assert "1 unproven" in lenient.output and "1 undecided" in lenient.output
    strict = CliRunner().invoke(validate_command, [bundle, "--require-proof", "--json"])
    assert strict.exit_code == 1
    assert {t["proof"] for t in json.loads(strict.output)[0]["tasks"]} == {"failed"}


def test_release_reader_prefers_code_mode_over_sql_for_one_task(tmp_path: Path) -> None:
    rows = _library_only(_release_rows())
    rows["gen_verifier.jsonl"].append(
        {
            "scenario": "library_3",
            "task_idx": 1,
            "task": "x",
            "verification": {"code": CODE_IN_SQL_FILE},
        }
    )
    scenarios, _ = read_release(_write(tmp_path / "r", rows))
    assert scenarios["library_3"].verifiers[1].mode == "code"
