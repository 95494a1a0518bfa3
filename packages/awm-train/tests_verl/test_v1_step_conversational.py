"""One GRPO step on conversational tasks (a scripted user) through verl 0.9.1's V1 trainer.

The same chain as ``test_v1_step.py`` (``v1_step.py`` in its own process), on the shop's
conversational tasks prepared with ``awm train prepare shop --conversational``: half the
trajectories replay the reference conversation (the scripted user answers, reward 1), half
are sampled from the tiny random model (reward -1); the user's replies are observations in
the rows' prompts, and every row is trained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
pytestmark = pytest.mark.timeout(1800)  # Ray + TransferQueue + FSDP on two cores


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from awm_train.offline import smollm2_tokenizer, tiny_qwen3

    root = tmp_path_factory.mktemp("v1-step-conversational")
    tokenizer = smollm2_tokenizer()
    tiny_qwen3(tokenizer).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    awm = Path(sys.executable).with_name("awm")
    subprocess.run(
        [str(awm), "train", "prepare", "shop", "--conversational", "--out", str(root / "data")],
        check=True,
        capture_output=True,
    )
    env = {
        **os.environ,
        "VERL_USE_EXTERNAL_MODULES": "awm_train.verl_cpu_platform",
        "VERL_PLATFORM": "cpu",
        "RAY_DEDUP_LOGS": "1",
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "v1_step.py"), str(root / "model"), str(root / "data")],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("V1_STEP ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-6000:])
    out: dict[str, Any] = json.loads(lines[-1].removeprefix("V1_STEP "))
    print("v1 step (conversational):", json.dumps(out["timings"]))
    return out


def test_conversational_groups_train_with_the_user_s_replies_as_observations(
    result: dict[str, Any],
) -> None:
    assert result["groups"] == result["prompts"] == 2
    assert result["trajectories"] == result["prompts"] * result["n"]
    assert result["refills"] == []
    half = result["trajectories"] // 2
    assert result["rewards"] == [-1.0] * half + [1.0] * half
    assert result["masks_ok"]  # loss mask = response mask: only the agent's tokens
    assert result["user_replies_in_prompts"] > 0
    assert max(result["rows_per_trajectory"]) > 1
    assert result["parameters_changed"] == result["parameters"] > 0
