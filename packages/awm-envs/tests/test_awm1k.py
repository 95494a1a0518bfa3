"""Importing the official AWM-1K layout (with each of its defects) and exporting back."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from awm_envs.awm1k.export import export_awm
from awm_envs.awm1k.importer import import_awm
from awm_envs.awm1k.read import read_release
from awm_envs.awm1k.repair import fix_escaped_quotes, rewrite_app
from awm_envs.bundle.timefreeze import freeze_now

FIXTURES = Path(__file__).parent / "fixtures" / "awm1k"
REF = datetime(2025, 6, 1, 12, 0, 0)


def _make_release(folder: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "awm1k_make_release", FIXTURES / "make_release.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_release(folder)


def run_verifier(env, task, initial: bytes, final: bytes, answer: str | None = None):
    from awm_envs.verifiers.trusted import load_verifiers, run_trusted

    return run_trusted(load_verifiers(env.path), task.verifier, initial, final, answer)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("awm1k")
    release = _make_release(root / "release")
    out = root / "out"
    results, problems = import_awm(release, out, reference_time=REF, workers=2)
    return out, {r.scenario: r for r in results}, problems


def test_escaped_quotes_become_sql_quotes() -> None:
    stmt = "INSERT INTO t VALUES ('The Hitchhiker\\'s Guide', 'O\\'Brien');"
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a TEXT, b TEXT)")
    conn.execute(fix_escaped_quotes(stmt))
    assert conn.execute("SELECT a, b FROM t").fetchone() == ("The Hitchhiker's Guide", "O'Brien")


def test_wall_clock_reads_are_frozen_to_the_reference_time() -> None:
    sql = "SELECT datetime('now', '-3 days'), date('now'), strftime('%Y', 'now'), CURRENT_TIMESTAMP"
    frozen = freeze_now(sql, REF).sql
    assert "'now'" not in frozen and "CURRENT_TIMESTAMP" not in frozen
    row = sqlite3.connect(":memory:").execute(frozen).fetchone()
    assert row == ("2025-05-29 12:00:00", "2025-06-01", "2025", "2025-06-01 12:00:00")


def test_official_app_shape_is_rewritten() -> None:
    code = 'engine = create_engine(\n    "sqlite:///x.db",\n    connect_args={"a": (1, 2)},\n)\nuvicorn.run(app, host="h", port=int("1"))\n'
    out = rewrite_app(code)
    assert 'create_engine("sqlite://"' in out and "x.db" not in out
    assert "uvicorn.run(" not in out  # outside a __main__ block it would run at import
    assert out.count("def _awm_session_shim(") == 1 and "awm_envs" not in out
    assert rewrite_app(out) == out  # never stacked


def test_release_files_are_joined_on_the_normalised_name(tmp_path: Path) -> None:
    scenarios, problems = read_release(_make_release(tmp_path / "r"))
    assert set(scenarios) == {"library_3", "broken_app_1", "bad_data_2"}
    lib = scenarios["library_3"]
    assert lib.verifiers[0].mode == "code" and lib.verifiers[1].mode == "sql"
    messages = [p.message for p in problems]
    assert any("invalid JSON" in m for m in messages)
    assert any(p.scenario == "ghost_9" for p in problems)


def test_good_scenario_is_imported_and_serves_tools(imported) -> None:
    from awm_envs.runtime.environment import load_environment

    out, results, _ = imported
    assert results["library_3"].status == "imported"
    env = load_environment(out / "library_3")
    inst = env.instance()
    found = inst.call_tool_sync("search_books", {"q": "Hitchhiker"})
    assert not found.is_error, found.content
    assert found.content[0]["author"] == "O'Brien"
    loan = inst.call_tool_sync("borrow_book", {"book_id": 2})
    assert not loan.is_error, loan.content
    # sold out now: the error reaches the agent and the failed call changes nothing
    before = inst.snapshot_sync()
    again = inst.call_tool_sync("borrow_book", {"book_id": 2})
    assert again.is_error and "not available" in str(again.content)
    assert inst.snapshot_sync() == before


def test_imported_instances_are_isolated(imported) -> None:
    from awm_envs.runtime.environment import load_environment

    out, _, _ = imported
    env = load_environment(out / "library_3")
    a, b = env.instance(), env.instance()
    assert not a.call_tool_sync("borrow_book", {"book_id": 2}).is_error
    assert b.call_tool_sync("search_books", {"q": "Hitchhiker"}).content[0]["copies"] == 1


def test_both_verifier_modes_run_with_the_native_signature(imported) -> None:
    from awm_envs.runtime.environment import load_environment

    out, _, _ = imported
    env = load_environment(out / "library_3")
    borrow, listing = env.tasks
    inst = env.instance()
    initial = inst.snapshot_sync()
    assert run_verifier(env, borrow, initial, initial).complete is False
    inst.call_tool_sync("borrow_book", {"book_id": 2})
    assert run_verifier(env, borrow, initial, inst.snapshot_sync()).complete is True
    listed = run_verifier(env, listing, initial, initial)
    assert listed.complete is False and listed.error is None
    assert listed.evidence == {
        "official": {"titles_by_obrien": ["The Hitchhiker's Guide"]},
        "undecided": True,
    }


def test_seed_data_has_no_clock_reads(imported) -> None:
    out, _, _ = imported
    bundle = out / "library_3"
    seed = (bundle / "seed.sql").read_text()
    assert "'now'" not in seed and "CURRENT_" not in (bundle / "schema.sql").read_text()
    conn = sqlite3.connect(":memory:")
    conn.executescript((bundle / "schema.sql").read_text() + seed)
    assert conn.execute("SELECT added_at FROM books WHERE id = 2").fetchone() == (
        "2025-05-29 12:00:00",
    )
    assert conn.execute("SELECT added_at FROM books WHERE id = 3").fetchone() == (
        "2025-06-01 12:00:00",
    )


def test_failing_scenarios_are_reported_with_a_reason_not_dropped(imported) -> None:
    out, results, _ = imported
    assert results["broken_app_1"].status == "failed"
    assert "crashes at import" in " ".join(p.message for p in results["broken_app_1"].problems)
    assert results["bad_data_2"].status == "failed"
    assert "inserts fail" in results["bad_data_2"].problems[0].message
    assert not (out / "broken_app_1").exists()
    report = json.loads((out / "import-report.json").read_text())
    assert report["counts"] == {"imported": 1, "skipped": 0, "failed": 2}


def test_import_resumes_without_redoing_finished_bundles(imported, tmp_path: Path) -> None:
    # on a copy: resuming rewrites import-report.json, which other tests read from the fixture
    out = Path(shutil.copytree(imported[0], tmp_path / "out"))
    release = imported[0].parent / "release"
    stamp = (out / "library_3" / "app.py").stat().st_mtime_ns
    results, _ = import_awm(release, out, reference_time=REF)
    statuses = {r.scenario: r.status for r in results}
    assert statuses == {"library_3": "skipped", "broken_app_1": "failed", "bad_data_2": "failed"}
    assert (out / "library_3" / "app.py").stat().st_mtime_ns == stamp


def test_export_then_import_round_trips_tasks_and_verifiers(imported, tmp_path: Path) -> None:
    from awm_envs.runtime.environment import load_environment

    out, _, _ = imported
    counts = export_awm([out / "library_3"], tmp_path / "exported")
    # the release's rows as they were: one code-mode row for task 0, one sql-mode for task 1
    assert counts["gen_scenario.jsonl"] == 1 and counts["gen_verifier.pure_code.jsonl"] == 1
    assert counts["gen_verifier.jsonl"] == 1
    results, _ = import_awm(
        tmp_path / "exported", tmp_path / "again", reference_time=REF, workers=1
    )
    assert [r.status for r in results] == ["imported"], results[0].problems
    env = load_environment(tmp_path / "again" / "library_3")
    assert [t.instruction for t in env.tasks] == [
        t.instruction for t in load_environment(out / "library_3").tasks
    ]
    inst = env.instance()
    initial = inst.snapshot_sync()
    inst.call_tool_sync("borrow_book", {"book_id": 2})
    assert run_verifier(env, env.tasks[0], initial, inst.snapshot_sync()).complete is True


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"gen_scenario.jsonl": b"\x98\xff\x00garbage" * 50}, "is not a JSON-lines text file"),
        (
            {"gen_scenario.jsonl": b'{"name": "shop", "description": "d"}\n',
             "gen_tasks.jsonl": bytes(range(256))},
            "gen_tasks.jsonl is not a JSON-lines text file",
        ),
        ({"gen_scenario.jsonl": b'{"foo": 1}\n[1, 2]\n'}, "names no scenario (1 object rows"),
        ({"gen_scenario.jsonl": b"not json\n"}, "names no scenario (no JSON object rows)"),
    ],
)  # fmt: skip
def test_import_awm_answers_garbage_with_one_line_and_a_nonzero_status(
    tmp_path: Path, files: dict[str, bytes], expected: str
) -> None:
    from click.testing import CliRunner

    from awm_envs.cli.awm1k import import_awm_command

    release = tmp_path / "release"
    release.mkdir()
    for name, data in files.items():
        (release / name).write_bytes(data)
    out = CliRunner().invoke(import_awm_command, [str(release), "--out", str(tmp_path / "o")])
    assert out.exit_code == 1, out.output
    assert expected in out.output
    assert isinstance(out.exception, SystemExit), out.exception  # a clean exit, no traceback
