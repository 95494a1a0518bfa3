"""Atomic writes and stage checkpoints: no half-written file, resume skips finished stages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from awm_core.atomic import atomic_replace_dir, atomic_write_json, atomic_write_text
from awm_synth.errors import RunDirError
from awm_synth.store.checkpoint import RunDir
from awm_synth.store.records import StageRecord


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "f.json"
    atomic_write_json(target, {"v": 1})
    atomic_write_json(target, {"v": 2})
    assert target.read_text().strip().endswith("}")
    assert '"v": 2' in target.read_text()
    assert [p.name for p in target.parent.iterdir()] == ["f.json"]  # no temp files left


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old")

    def boom(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_directory_swap(tmp_path: Path) -> None:
    staging, target = tmp_path / ".staging", tmp_path / "bundle"
    for content in ("one", "two"):
        staging.mkdir()
        (staging / "x").write_text(content)
        atomic_replace_dir(staging, target)
    assert (target / "x").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]


def test_stage_checkpoint_round_trip(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    record = StageRecord(stage="schema", scenario="shop", accepted=True, artifact={"tables": []})
    assert run.load_stage("shop", "schema") is None
    run.save_stage(record)
    assert run.load_stage("shop", "schema") == record
    assert [r.stage for r in run.stage_records()] == ["schema"]


def test_unreadable_checkpoint_says_how_to_recover(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    path = run.stage_path("shop", "data")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(RunDirError, match="delete it"):
        run.load_stage("shop", "data")
