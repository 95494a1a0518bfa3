"""``awm train run``: recipes become one verl ``main_ppo`` command line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_train.recipes import RecipeError, agent_loop_config, list_recipes, load_recipe


def test_the_paper_recipe_carries_the_paper_s_settings() -> None:
    assert "paper" in list_recipes() and "agent_loop" not in list_recipes()
    overrides = dict(o.split("=", 1) for o in load_recipe("paper").overrides)
    assert overrides["algorithm.adv_estimator"] == "grpo"
    assert overrides["actor_rollout_ref.actor.kl_loss_coef"] == "0.001"
    assert overrides["actor_rollout_ref.actor.clip_ratio_high"] == "0.28"
    assert overrides["algorithm.rollout_correction.rollout_is"] == "sequence"
    assert (
        int(overrides["data.train_batch_size"]) * int(overrides["actor_rollout_ref.rollout.n"])
        == 1024
    )
    assert overrides["trainer.use_v1"] == "true"


def test_dry_run_prints_the_verl_command_with_user_overrides_last(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(),
        [
            "train",
            "run",
            "paper",
            "--data",
            str(tmp_path),
            "--model",
            "/m",
            "--dry-run",
            "--json",
            "trainer.nnodes=2",
        ],
    )
    assert result.exit_code == 0, result.output
    command = json.loads(result.output)
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert f"data.train_files={tmp_path.resolve() / 'train.parquet'}" in command
    assert "actor_rollout_ref.model.path=/m" in command
    assert (
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config()}" in command
    )
    assert command[-1] == "trainer.nnodes=2"
    assert agent_loop_config().is_file()


def test_unknown_and_malformed_recipes_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="no recipe 'nope'; known: cpu-smoke, paper"):
        load_recipe("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("overrides:\n  - not-an-override\n")
    with pytest.raises(RecipeError, match="key=value"):
        load_recipe(str(bad))


@pytest.mark.skipif(importlib.util.find_spec("verl") is not None, reason="verl is installed here")
def test_running_without_verl_says_how_to_install_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["train", "run", "paper", "--data", str(tmp_path)])
    assert result.exit_code == 1 and "pip install 'awm-train[verl]'" in result.output


def test_cpu_smoke_sets_verl_s_plugin_env_and_needs_a_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(), ["train", "run", "cpu-smoke", "--data", str(tmp_path), "--dry-run"]
    )
    assert result.exit_code == 2 and "names no model" in result.output
    result = CliRunner().invoke(
        build_cli(),
        ["train", "run", "cpu-smoke", "--data", str(tmp_path), "--model", "m", "--dry-run"],
        env={"VERL_PLATFORM": None, "VERL_USE_EXTERNAL_MODULES": None},
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "VERL_USE_EXTERNAL_MODULES=awm_train.verl_cpu_platform VERL_PLATFORM=cpu "
    )
    assert "actor_rollout_ref.rollout.name=hf" in result.output
