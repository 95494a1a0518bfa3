"""``awm train run cpu-learn`` (which extends ``cpu-smoke``): verl's own ``main_ppo``, two GRPO steps on the CPU.

The recipe runs the whole V1 trainer as verl starts it (TaskRunnerV1, Ray worker
groups, LLMServerManager, CheckpointEngineManager) with the transformers rollout
replica (``rollout.name=hf``) that the CPU platform plug-in registers; after each
step verl syncs the actor's weights into the rollout server (naive backend). The
run itself is the ``run`` fixture of conftest.py, shared with test_export_eval.py and
test_learn_cpu.py.
"""

from __future__ import annotations

import re
import subprocess

import pytest

pytestmark = pytest.mark.timeout(1800)


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
