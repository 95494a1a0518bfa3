"""One ``awm train run cpu-smoke`` for the whole verl suite: the slowest thing it does.

verl's own ``main_ppo`` trains a tiny random Qwen3 for two GRPO steps and saves a
checkpoint after each (``trainer.save_freq=1``), so the same run serves the tests
of the trainer (test_main_ppo_cpu.py) and of the way out of it: export and
evaluation (test_export_eval.py). Session scope: with ``pytest -n`` every worker
would train once, so the suite runs in one process (``nox -s train`` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cpu_smoke_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's folder: model/ (the initial weights), data/, and ckpt/ (verl's checkpoints)."""
    return tmp_path_factory.mktemp("cpu-smoke")


@pytest.fixture(scope="session")
def run(cpu_smoke_dir: Path) -> subprocess.CompletedProcess[str]:
    from awm_train.offline import smollm2_tokenizer, tiny_qwen3

    root = cpu_smoke_dir
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
            "trainer.save_freq=1",  # a checkpoint after each of the two steps
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1700,
        cwd=root,
    )
