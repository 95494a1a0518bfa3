"""The resumable run journal every benchmark runner writes ``MODE.jsonl`` through."""

from __future__ import annotations

import json
from pathlib import Path

from awm_bench.journal import Journal


def test_a_row_is_appended_as_one_json_line_the_moment_it_is_added(tmp_path: Path) -> None:
    path = tmp_path / "awm.jsonl"
    journal = Journal(path, "case_id", ["a", "b"])
    journal.add({"case_id": "a", "valid": True})
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"case_id": "a", "valid": True}
    ]
    assert "a" in journal and "b" not in journal and journal.todo() == ["b"]


def test_a_restarted_run_skips_done_cases_and_a_line_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "awm.jsonl"
    path.write_text('{"case_id": "b", "valid": false}\n{"case_id": "a", "va', encoding="utf-8")
    journal = Journal(path, "case_id", ["a", "b", "c"])
    assert journal.todo() == ["a", "c"]
    journal.add({"case_id": "a", "valid": True})
    assert [r["case_id"] for r in journal.rows()] == ["a", "b"]  # the run's order
    assert [r["case_id"] for r in Journal(path, "case_id", ["a", "b", "c"]).rows()] == ["a", "b"]


def test_progress_counts_the_cases_done_in_the_whole_run(tmp_path: Path) -> None:
    path = tmp_path / "native.jsonl"
    path.write_text('{"key": "x"}\n', encoding="utf-8")
    seen: list[tuple[str, int, int]] = []
    journal = Journal(
        path, "key", ["x", "y", "z"], label="demo native", progress=lambda *a: seen.append(a)
    )
    for key in journal.todo():
        journal.add({"key": key})
    assert seen == [("demo native", 2, 3), ("demo native", 3, 3)]
