"""The validator proves good tasks and reports each kind of defect in a broken bundle."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_envs.cli.validate import validate_command
from awm_envs.validation.validate import TaskValidation, catalog_env_ids, validate_environment
from awm_envs.verifiers.trusted import load_verifiers, readonly_connection, run_trusted

SCHEMA = """
CREATE TABLE notes (note_id INTEGER PRIMARY KEY, text TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX ix_notes_done ON notes(done);
"""
SEED = """
INSERT INTO notes (note_id, text, done) VALUES (1, 'buy milk', 1);
INSERT INTO notes (note_id, text, done) VALUES (2, 'call Ana', 0);
INSERT INTO notes (note_id, text, done) VALUES (3, 'pay rent', 0);
"""
APP = """
from collections.abc import Iterator

from fastapi import Depends, FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy import create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "notes"
    note_id: Mapped[int] = mapped_column(primary_key=True)
    text: Mapped[str]
    done: Mapped[int]


class NoteOut(BaseModel):
    note_id: int
    text: str
    done: bool


def get_db() -> Iterator[Session]:
    with Session(create_engine("sqlite:///notes.db")) as session:
        yield session


app = FastAPI()


@app.get("/notes/{note_id}", operation_id="get_note", response_model=NoteOut)
def get_note(note_id: int, db: Session = Depends(get_db)) -> NoteOut:
    note = db.get(Note, note_id)
    if note is None:
        raise HTTPException(404, f"note {note_id} not found")
    return NoteOut(note_id=note.note_id, text=note.text, done=bool(note.done))


@app.post("/notes/{note_id}/done", operation_id="mark_done", response_model=NoteOut)
def mark_done(note_id: int, db: Session = Depends(get_db)) -> NoteOut:
    note = db.get(Note, note_id)
    if note is None:
        raise HTTPException(404, f"note {note_id} not found")
    if note.done:
        raise HTTPException(409, f"note {note_id} is already done")
    note.done = 1
    db.commit()
    return NoteOut(note_id=note.note_id, text=note.text, done=True)
"""
VERIFIERS = """
def _done(conn):
    return {r[0] for r in conn.execute("SELECT note_id FROM notes WHERE done = 1")}


def verify_note2_done(initial, final, final_answer):
    return {"complete": _done(final) - _done(initial) == {2}, "evidence": {"done": sorted(_done(final))}}


def verify_note1_done(initial, final, final_answer):
    return {"complete": 1 in _done(final), "evidence": {}}


def verify_any_new_done(initial, final, final_answer):
    return {"complete": bool(_done(final) - _done(initial)), "evidence": {}}


def verify_text_ignoring_answer(initial, final, final_answer):
    return {"complete": _done(final) == _done(initial), "evidence": {}}


def verify_text_of_note3(initial, final, final_answer):
    text = initial.execute("SELECT text FROM notes WHERE note_id = 3").fetchone()[0]
    return {"complete": _done(final) == _done(initial) and text in (final_answer or "").lower(), "evidence": {}}


def verify_raises(initial, final, final_answer):
    raise KeyError("no such column")
"""


def _task(task_id: str, verifier: str, steps: list[tuple[str, dict]], **extra: object) -> dict:
    return {
        "id": task_id,
        "instruction": f"task {task_id}",
        "complexity": extra.pop("complexity", "easy"),
        "reference_solution": [{"tool": t, "arguments": a} for t, a in steps],
        "verifier": verifier,
        **extra,
    }


TASKS = [
    _task(
        "good_write",
        "verify_note2_done",
        [("get_note", {"note_id": 2}), ("mark_done", {"note_id": 2})],
    ),
    _task(
        "good_read",
        "verify_text_of_note3",
        [("get_note", {"note_id": 3})],
        reference_answer="Note 3 says: pay rent.",
    ),
    _task(
        "already_complete",
        "verify_note1_done",
        [("get_note", {"note_id": 1})],
        reference_answer="It is done.",
    ),
    _task("reference_errors", "verify_note2_done", [("mark_done", {"note_id": 99})]),
    _task(
        "lenient_write",
        "verify_any_new_done",
        [("mark_done", {"note_id": 2})],
        negative_examples=[
            {
                "description": "marks the wrong note",
                "solution": [{"tool": "mark_done", "arguments": {"note_id": 3}}],
            }
        ],
    ),
    _task(
        "lenient_answer",
        "verify_text_ignoring_answer",
        [("get_note", {"note_id": 3})],
        reference_answer="pay rent",
    ),
    _task("verifier_raises", "verify_raises", [("mark_done", {"note_id": 2})]),
    _task("wrong_bucket", "verify_note2_done", [("mark_done", {"note_id": 2})], complexity="hard"),
]


@pytest.fixture
def notes_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    manifest = {
        "id": "notes",
        "name": "Notes",
        "description": "A tiny to-do list used to test the validator.",
        "category": "test",
        "reference_time": "2025-01-01T00:00:00Z",
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "schema.sql").write_text(SCHEMA)
    (root / "seed.sql").write_text(SEED)
    (root / "app.py").write_text(textwrap.dedent(APP))
    (root / "verifiers.py").write_text(textwrap.dedent(VERIFIERS))
    (root / "tasks.json").write_text(json.dumps(TASKS))
    return root


@pytest.fixture
def notes_results(notes_bundle: Path) -> dict[str, TaskValidation]:
    result = validate_environment(notes_bundle)
    assert result.problems == []
    return {t.task_id: t for t in result.tasks}


def test_a_sound_write_task_passes(notes_results: dict[str, TaskValidation]) -> None:
    task = notes_results["good_write"]
    assert task.passed, task
    kinds = {c.kind for c in task.checks}
    assert {"initial", "reference", "dropped_last_write", "no_action"} <= kinds


def test_a_sound_read_only_task_is_judged_on_its_answer(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["good_read"]
    assert task.passed, task
    assert sum(c.kind == "wrong_answer" for c in task.checks) >= 2


def test_a_task_already_complete_initially_is_reported(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["already_complete"]
    assert not task.initial_not_complete
    assert not task.passed


def test_a_reference_solution_with_a_tool_error_is_reported(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["reference_errors"]
    assert not task.reference_complete
    assert any("tool errors" in p and "not found" in p for p in task.problems)


def test_a_lenient_verifier_that_accepts_a_wrong_trajectory_is_reported(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["lenient_write"]
    assert task.initial_not_complete and task.reference_complete
    assert not task.wrong_rejected
    bad = [c for c in task.checks if not c.ok]
    assert [c.kind for c in bad] == ["negative_example"]


def test_a_verifier_that_ignores_the_final_answer_is_reported(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["lenient_answer"]
    assert not task.wrong_rejected
    assert (
        not task.initial_not_complete
    )  # nothing changed and no answer needed: "complete" for free


def test_a_verifier_that_raises_counts_as_a_failure_not_a_pass(
    notes_results: dict[str, TaskValidation],
) -> None:
    task = notes_results["verifier_raises"]
    assert not task.passed
    assert any("KeyError" in p for p in task.problems)


def test_a_mislabelled_complexity_is_reported(notes_results: dict[str, TaskValidation]) -> None:
    task = notes_results["wrong_bucket"]
    assert not task.complexity_ok and not task.passed


def test_a_task_naming_a_missing_verifier_is_reported(notes_bundle: Path) -> None:
    tasks = json.loads((notes_bundle / "tasks.json").read_text())
    tasks.append(_task("missing_verifier", "verify_nothing_here", [("mark_done", {"note_id": 2})]))
    (notes_bundle / "tasks.json").write_text(json.dumps(tasks))
    result = validate_environment(notes_bundle)
    assert not result.passed
    assert any("verify_nothing_here" in p for p in result.problems)


def test_a_missing_verifier_function_fails_the_native_runner(notes_bundle: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA + SEED)
    snap = conn.serialize()
    outcome = run_trusted(load_verifiers(notes_bundle), "verify_nothing_here", snap, snap, None)
    assert not outcome.complete and outcome.error and "no verifier named" in outcome.error.message


def test_verifiers_get_read_only_connections(notes_bundle: Path) -> None:
    (notes_bundle / "verifiers.py").write_text(
        "def verify_writes(initial, final, final_answer):\n"
        '    final.execute("UPDATE notes SET done = 1")\n'
        "    return {'complete': True, 'evidence': {}}\n"
    )
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA + SEED)
    snap = conn.serialize()
    outcome = run_trusted(load_verifiers(notes_bundle), "verify_writes", snap, snap, None)
    assert not outcome.complete
    assert outcome.error and "readonly" in outcome.error.message.lower().replace("-", "")


def test_readonly_connection_is_a_private_copy() -> None:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA + SEED)
    ro = readonly_connection(conn.serialize())
    assert ro.execute("SELECT COUNT(*) FROM notes").fetchone() == (3,)
    with pytest.raises(sqlite3.OperationalError):
        ro.execute("DELETE FROM notes")


def test_cli_exits_non_zero_on_a_broken_bundle(notes_bundle: Path) -> None:
    result = CliRunner().invoke(validate_command, [str(notes_bundle)])
    assert result.exit_code == 1
    assert "already_complete" in result.output


def test_cli_json_output_lists_every_task(notes_bundle: Path) -> None:
    result = CliRunner().invoke(validate_command, [str(notes_bundle), "--json"])
    payload = json.loads(result.output)
    assert {t["task_id"] for t in payload[0]["tasks"]} == {t["id"] for t in TASKS}
    assert payload[0]["passed"] is False


def test_cli_rejects_an_unknown_environment() -> None:
    result = CliRunner().invoke(validate_command, ["no-such-env"])
    assert result.exit_code == 2
    assert "no environment" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("env_id", catalog_env_ids())
def test_every_catalog_task_is_proven(env_id: str) -> None:
    # through the real `awm` root command, so the plugin wiring is proven too
    result = CliRunner().invoke(build_cli(), ["envs", "validate", env_id, "--json"])
    payload = json.loads(result.output)
    failures = [
        (
            t["task_id"],
            t["problems"],
            [c for c in t["checks"] if c["complete"] != c["expected_complete"]],
        )
        for e in payload
        for t in e["tasks"]
        if not t["passed"]
    ]
    assert result.exit_code == 0 and not failures and not payload[0]["problems"], (
        failures,
        payload[0]["problems"],
    )
    assert len(payload[0]["tasks"]) >= 10  # ten each, plus access-control and conversational ones
