"""``awm train run cpu-smoke``: verl's own ``main_ppo`` entry point, two GRPO steps on the CPU.

The recipe runs the whole V1 trainer as verl starts it (TaskRunnerV1, Ray worker
groups, LLMServerManager, CheckpointEngineManager) with the transformers rollout
replica (``rollout.name=hf``) that the CPU platform plug-in registers; after each
step verl syncs the actor's weights into the rollout server (naive backend).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    from awm_train.offline import smollm2_tokenizer, tiny_qwen3

    root = tmp_path_factory.mktemp("cpu-smoke")
    tokenizer = smollm2_tokenizer()
    tiny_qwen3(tokenizer).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    awm = str(Path(sys.executable).with_name("awm"))
    subprocess.run(
        [awm, "train", "prepare", "shop", "--out", str(root / "data")],
        check=True,
        capture_output=True,
    )
    # the recipe sets VERL_USE_EXTERNAL_MODULES / VERL_PLATFORM itself
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
    env["RAY_DEDUP_LOGS"] = "0"
    data = root / "data"
    return subprocess.run(
        [
            awm,
            "train",
            "run",
            "cpu-smoke",
            "--data",
            str(data),
            "--model",
            str(root / "model"),
            f"data.val_files={data / 'train.parquet'}",
            f"trainer.default_local_dir={root / 'ckpt'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1700,
        cwd=root,
    )


def test_main_ppo_finishes_two_grpo_steps(run: subprocess.CompletedProcess[str]) -> None:
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-6000:]
    steps = sorted({int(m) for m in re.findall(r"\sstep:(\d+) - ", log)})  # verl's console logger
    assert steps[-2:] == [1, 2], steps
    assert re.search(r"actor/pg_loss:", log), "no actor update metrics"


def test_the_rollout_server_gets_the_trained_weights(
    run: subprocess.CompletedProcess[str],
) -> None:
    log = run.stdout + run.stderr
    loads = re.findall(r"awm hf rollout: loaded (\d+) of (\d+) tensors, weights v(\d+)", log)
    assert loads, "verl never synced weights into the rollout server"
    assert all(int(n) == int(total) > 0 for n, total, _ in loads), loads
    assert {int(v) for *_, v in loads} >= {1}, loads
