"""``awm train run``: recipes become one verl ``main_ppo`` command line and a run folder.

verl itself checks the recipes in tests_verl/test_validate_config.py; these
tests need no verl: the command line, the agent-loop file written next to the
checkpoints, and the judge-model check that stops a run before verl starts.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from awm_core.cli import build_cli
from awm_train.recipes import (
    JUDGE_MODEL_ENV,
    RecipeError,
    agent_loop_config,
    list_recipes,
    load_recipe,
)

LOOP_PATH = "actor_rollout_ref.rollout.agent.agent_loop_config_path"


def _overrides(name: str) -> dict[str, str]:
    return dict(o.split("=", 1) for o in load_recipe(name).overrides)


def _run(*args: str, judge_model: str | None = None) -> Result:
    return CliRunner().invoke(
        build_cli(), ["train", "run", *args], env={JUDGE_MODEL_ENV: judge_model}
    )


def _dry_run(tmp_path: Path, recipe: str, *extra: str, **kw: Any) -> tuple[Result, list[str]]:
    result = _run(
        recipe, "--data", str(tmp_path), "--model", "/m", "--dry-run", "--json", *extra, **kw
    )
    assert result.exit_code == 0, result.output
    return result, json.loads(result.stdout)


def _loop_file(command: list[str]) -> Path:
    return Path(next(o for o in command if o.startswith(LOOP_PATH + "=")).split("=", 1)[1])


def test_the_paper_recipe_carries_the_paper_s_settings() -> None:
    assert "paper" in list_recipes() and "agent_loop" not in list_recipes()
    paper = load_recipe("paper")
    overrides = _overrides("paper")
    assert overrides["algorithm.adv_estimator"] == "grpo"
    assert overrides["actor_rollout_ref.actor.kl_loss_coef"] == "0.001"
    assert overrides["actor_rollout_ref.actor.clip_ratio_high"] == "0.28"
    assert overrides["algorithm.rollout_correction.rollout_is"] == "sequence"
    assert (
        int(overrides["data.train_batch_size"]) * int(overrides["actor_rollout_ref.rollout.n"])
        == 1024
    )
    assert overrides["trainer.use_v1"] == "true"
    assert paper.agent_loop_entry()["judge"] == "code+llm"
    # a 96-step run saves checkpoints and logs without a W&B login
    assert 0 < int(overrides["trainer.save_freq"]) <= int(overrides["trainer.total_training_steps"])
    assert overrides["trainer.logger"] == "[console]"
    # a full row (prompt + one response) fits vLLM's context and one training micro-batch
    row = int(overrides["data.max_prompt_length"]) + int(overrides["data.max_response_length"])
    assert int(overrides["actor_rollout_ref.rollout.max_model_len"]) >= row
    assert overrides["actor_rollout_ref.actor.use_dynamic_bsz"] == "true"
    assert int(overrides["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"]) >= row
    assert int(overrides["actor_rollout_ref.ref.log_prob_max_token_len_per_gpu"]) >= row
    assert int(overrides["actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"]) >= row
    assert 0 < float(overrides["actor_rollout_ref.rollout.gpu_memory_utilization"]) < 1
    assert int(overrides["actor_rollout_ref.rollout.tensor_model_parallel_size"]) >= 1


def test_paper_multinode_extends_paper_for_four_nodes() -> None:
    paper, multi = load_recipe("paper"), load_recipe("paper-multinode")
    assert multi.overrides[: len(paper.overrides)] == paper.overrides  # then its own, which win
    assert multi.value("trainer.nnodes") == "4" and multi.value("trainer.n_gpus_per_node") == "8"
    assert multi.model == paper.model and multi.requires == "gpu"
    entry = multi.agent_loop_entry()
    assert entry["judge"] == "code+llm" and entry["backend"] == "process"
    workers = int(multi.value("actor_rollout_ref.rollout.agent.num_workers") or 0)
    per_step = int(multi.value("data.train_batch_size") or 0) * int(
        multi.value("actor_rollout_ref.rollout.n") or 0
    )
    group = int(multi.value("actor_rollout_ref.rollout.n") or 0)
    assert per_step == 1024 and per_step % workers == 0
    assert entry["pool_size"] >= group  # a whole GRPO group of one task runs at once


def test_dry_run_prints_the_verl_command_with_user_overrides_last(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _, command = _dry_run(
        tmp_path, "paper", "trainer.nnodes=2", f"trainer.default_local_dir={run}", judge_model="m"
    )
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert f"data.train_files={tmp_path.resolve() / 'train.parquet'}" in command
    assert "actor_rollout_ref.model.path=/m" in command
    assert command.index("trainer.nnodes=2") > command.index("trainer.nnodes=1")
    assert command[-1] == f"trainer.default_local_dir={run}"
    assert _loop_file(command) == run / "agent_loop.yaml"


def test_the_run_folder_is_made_absolute_and_holds_the_merged_agent_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _, command = _dry_run(tmp_path, "paper", judge_model="openai:judge")
    run = tmp_path / "checkpoints" / "awm-paper"
    assert command[-1] == f"trainer.default_local_dir={run}"
    [entry] = yaml.safe_load(_loop_file(command).read_text())
    [shipped] = yaml.safe_load(agent_loop_config().read_text())
    assert entry["judge"] == "code+llm" and shipped["judge"] == "code"
    assert {k: v for k, v in entry.items() if k not in load_recipe("paper").agent_loop} == {
        k: v for k, v in shipped.items() if k not in load_recipe("paper").agent_loop
    }


def test_a_recipe_s_agent_loop_mapping_passes_every_key_through(tmp_path: Path) -> None:
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "extends": "cpu-smoke",
                "agent_loop": {
                    "history_window": 5,
                    "ray_options": {"num_cpus": 0.5},
                    "checks": {"require_reasoning": False},
                    "system_prompt": "Use the tools.",
                    "a_future_setting": 7,
                },
                "overrides": ["trainer.total_training_steps=3"],
            }
        )
    )
    _, command = _dry_run(tmp_path, str(recipe), f"trainer.default_local_dir={tmp_path / 'r'}")
    [entry] = yaml.safe_load(_loop_file(command).read_text())
    assert entry["name"] == "awm_agent" and entry["_target_"].endswith("AWMAgentLoop")
    assert entry["history_window"] == 5 and entry["a_future_setting"] == 7
    assert entry["checks"] == {"require_reasoning": False}
    assert entry["system_prompt"] == "Use the tools."
    assert entry["ray_options"] == {"num_cpus": 0.5} and entry["judge"] == "code"
    assert "actor_rollout_ref.rollout.name=hf" in command  # cpu-smoke's overrides first
    assert command.index("trainer.total_training_steps=3") > command.index(
        "trainer.total_training_steps=2"
    )


def test_an_llm_judge_without_a_judge_model_stops_the_run_before_verl(tmp_path: Path) -> None:
    run = f"trainer.default_local_dir={tmp_path / 'run'}"
    result = _run("paper", "--data", str(tmp_path), run)
    assert result.exit_code == 1
    assert JUDGE_MODEL_ENV in result.output and "code+llm" in result.output
    assert "pip install" not in result.output  # stopped before looking for verl
    # the dry run says so and still prints the command
    result = _run("paper", "--data", str(tmp_path), "--dry-run", run)
    assert result.exit_code == 0 and "main_ppo" in result.stdout
    assert "warning: recipe 'paper' judges with 'code+llm'" in result.stderr
    assert JUDGE_MODEL_ENV in result.stderr
    # the code judge needs no model
    result = _run("cpu-smoke", "--data", str(tmp_path), "--model", "m", "--dry-run", run)
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_your_own_agent_loop_file_wins_and_awm_writes_none(tmp_path: Path) -> None:
    mine = tmp_path / "loop.yaml"
    _, command = _dry_run(
        tmp_path,
        "paper",
        f"trainer.default_local_dir={tmp_path / 'run'}",
        f"{LOOP_PATH}={mine}",
    )  # no judge model: the judge is whatever the user's file says
    assert _loop_file(command) != mine  # the recipe's line is still there, before the user's
    assert f"{LOOP_PATH}={mine}" in command and not (tmp_path / "run").exists()


def test_an_interpolated_run_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = _run(
        "cpu-smoke",
        "--data",
        str(tmp_path),
        "--model",
        "m",
        "--dry-run",
        "trainer.default_local_dir=ckpt/${trainer.experiment_name}",
    )
    assert result.exit_code != 0
    assert isinstance(result.exception, RecipeError)
    assert "needs a plain path" in str(result.exception)


def test_unknown_and_malformed_recipes_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match=r"no recipe 'nope'; known: .*cpu-smoke.*paper"):
        load_recipe("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("overrides:\n  - not-an-override\n")
    with pytest.raises(RecipeError, match="key=value"):
        load_recipe(str(bad))
    bad.write_text("agent_loop: [judge, code]\noverrides: []\n")
    with pytest.raises(RecipeError, match="agent_loop must be a mapping"):
        load_recipe(str(bad))
    bad.write_text("agent_loop: {name: other}\noverrides: []\n")
    with pytest.raises(RecipeError, match="cannot rename"):
        load_recipe(str(bad))
    bad.write_text("extends: bad.yaml\n")
    with pytest.raises(RecipeError, match="more than 8 recipes deep"):
        load_recipe(str(bad))


@pytest.mark.skipif(importlib.util.find_spec("verl") is not None, reason="verl is installed here")
def test_running_without_verl_says_how_to_install_it(tmp_path: Path) -> None:
    result = _run(
        "paper",
        "--data",
        str(tmp_path),
        f"trainer.default_local_dir={tmp_path / 'run'}",
        judge_model="openai:judge",
    )
    assert result.exit_code == 1 and "pip install 'awm-train[verl]'" in result.output


def test_cpu_smoke_sets_verl_s_plugin_env_and_needs_a_model(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(), ["train", "run", "cpu-smoke", "--data", str(tmp_path), "--dry-run"]
    )
    assert result.exit_code == 2 and "names no model" in result.output
    result = CliRunner().invoke(
        build_cli(),
        [
            "train",
            "run",
            "cpu-smoke",
            "--data",
            str(tmp_path),
            "--model",
            "m",
            "--dry-run",
            f"trainer.default_local_dir={tmp_path / 'run'}",
        ],
        env={"VERL_PLATFORM": None, "VERL_USE_EXTERNAL_MODULES": None},
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        "VERL_USE_EXTERNAL_MODULES=awm_train.verl_cpu_platform VERL_PLATFORM=cpu "
    )
    assert "actor_rollout_ref.rollout.name=hf" in result.output
