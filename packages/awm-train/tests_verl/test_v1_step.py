"""One GRPO step on catalog tasks through verl 0.9.1's V1 trainer machinery on the CPU.

``v1_step.py`` runs in its own process (Ray, gloo and FSDP want a fresh one) on data
written by ``awm train prepare`` exactly as a user runs it; these tests read its JSON.
The chain: verl's RLHFDataset → AgentLoopManagerTQ → AgentLoopWorkerTQ (a Ray actor
running AWMAgentLoop) → TransferQueue → ReplayBuffer.sample → _balance_batch →
_compute_old_log_prob → _compute_advantage → _update_actor (FSDP2, verl's ppo_loss).
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

    root = tmp_path_factory.mktemp("v1-step")
    tokenizer = smollm2_tokenizer()
    tiny_qwen3(tokenizer).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    awm = Path(sys.executable).with_name("awm")
    subprocess.run(
        # the long tasks (6+ reference calls): their rows outgrow the history window
        [
            str(awm),
            "train",
            "prepare",
            "shop",
            "--complexity",
            "hard,very_hard",
            "--out",
            str(root / "data"),
        ],
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
    summary = {k: v for k, v in out.items() if k != "session_advantages"}
    print("v1 step:", json.dumps(summary))
    return out


def test_no_group_is_dropped_and_every_row_is_trained(result: dict[str, Any]) -> None:
    # every prompt of the batch comes back as a whole GRPO group: none failed, none refilled
    assert result["groups"] == result["prompts"] == 2
    assert result["trajectories"] == result["prompts"] * result["n"]
    assert result["refills"] == []
    # verl pads rows (not trajectories) up to a multiple of ppo_mini_batch_size x n
    assert result["rows_trained"] == result["rows"] + result["padding_rows"]
    assert result["rows_trained"] % (result["prompts"] * result["n"]) == 0
    assert result["padding_rows"] < result["prompts"] * result["n"]


def test_history_aware_rows_one_per_assistant_turn(result: dict[str, Any]) -> None:
    per = result["rows_per_trajectory"]
    assert sum(per) == result["rows"] and len(per) == result["trajectories"]
    assert max(per) > 1  # solved trajectories take several turns: several rows
    assert result["masks_ok"]  # loss mask = response mask, never empty


def test_each_row_s_prompt_is_truncated_by_the_window_in_agent_loop_yaml(
    result: dict[str, Any],
) -> None:
    """Row j's prompt shows the first exchange and the last ``history_window`` turns only."""
    import yaml

    (entry,) = yaml.safe_load((HERE.parent / "recipes" / "agent_loop.yaml").read_text())
    window = int(entry["history_window"])
    shown = result["assistant_turns_shown"]
    longest = max(shown.values(), key=len)
    # long enough that truncation happened: a window one larger would show one more turn
    assert len(longest) >= window + 3, (window, shown)
    base = longest[0]  # the generation prompt's own marker, if the template adds one
    assert [c - base for c in longest] == [min(j, 1 + window) for j in range(len(longest))]
    # the second-to-last row is a truncated one: it shows fewer turns than came before it
    assert longest[-2] - base == 1 + window < len(longest) - 2


def test_rewards_and_one_advantage_per_trajectory(result: dict[str, Any]) -> None:
    half = result["trajectories"] // 2
    assert result["rewards"] == [-1.0] * half + [1.0] * half
    advantages = result["session_advantages"]
    assert len(advantages) == result["trajectories"]
    assert all(len(v) == 1 for v in advantages.values()), advantages
    values = sorted(v[0] for v in advantages.values())
    assert values[0] < 0 < values[-1] and len(set(values)) == 2


def test_the_actor_recomputes_the_generator_s_log_probs(result: dict[str, Any]) -> None:
    diff = result["max_logprob_diff"]
    assert isinstance(diff, float) and diff < 1e-5, diff


def test_one_update_changes_the_weights(result: dict[str, Any]) -> None:
    assert result["parameters_changed"] == result["parameters"] > 0
    assert result["metrics"]["actor/grad_norm"] > 0
