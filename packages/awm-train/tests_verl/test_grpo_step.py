"""One GRPO step on awm rollouts through verl's own FSDP2 actor on the CPU (see grpo_step.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from awm_train.offline import smollm2_tokenizer, tiny_qwen3

    model_dir = tmp_path_factory.mktemp("tiny-qwen3")
    tokenizer = smollm2_tokenizer()
    tiny_qwen3(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    env = {
        **os.environ,
        "VERL_USE_EXTERNAL_MODULES": "awm_train.verl_cpu_platform",
        "VERL_PLATFORM": "cpu",
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "grpo_step.py"), str(model_dir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("GRPO_STEP ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out: dict[str, object] = json.loads(lines[-1].removeprefix("GRPO_STEP "))
    return out


def test_every_row_is_trained_and_a_trajectory_s_rows_share_one_advantage(
    result: dict[str, object],
) -> None:
    assert result["rows"] == result["rows_trained"] and result["trajectories"] == 4
    assert result["rewards"] == [-1.0, 1.0, -1.0, 1.0]
    advantages = result["session_advantages"]
    assert isinstance(advantages, dict) and len(advantages) == 4
    assert all(len(v) == 1 for v in advantages.values()), advantages
    solved = {v[0] for k, v in advantages.items() if k.endswith(("_1", "_3"))}
    failed = {v[0] for k, v in advantages.items() if k.endswith(("_0", "_2"))}
    assert len(solved) == len(failed) == 1 and solved.pop() > 0 > failed.pop()


def test_the_actor_recomputes_the_generator_s_log_probs(result: dict[str, object]) -> None:
    diff = result["max_logprob_diff"]
    assert isinstance(diff, float) and diff < 1e-5, diff


def test_one_update_changes_the_weights(result: dict[str, object]) -> None:
    assert result["parameters_changed"] == result["parameters"]
    grad = result["grad_norm"]
    assert isinstance(grad, float) and grad > 0
