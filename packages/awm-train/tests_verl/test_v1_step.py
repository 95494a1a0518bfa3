"""One GRPO step on catalog tasks through verl 0.9.1's V1 trainer machinery on the CPU.

``v1_step.py`` runs in its own process (Ray, gloo and FSDP want a fresh one) on data
written by ``awm train prepare`` exactly as a user runs it; these tests read its JSON.
The chain: verl's RLHFDataset → AgentLoopManagerTQ → AgentLoopWorkerTQ (a Ray actor
running AWMAgentLoop) → TransferQueue → ReplayBuffer.sample → _balance_batch →
_compute_old_log_prob → _compute_advantage → _update_actor (FSDP2, verl's ppo_loss).

One step, three GRPO groups (one step costs minutes here, so every kind of row shares it):
a long shop task (its rows outgrow the history window), a conversational shop task (the
scripted user's replies are observations), and a bank task perturbed by ``inject``,
prepared with a recipe's ``perturbations:`` (the naive policy that obeys the injection
is rewarded -1, the reference that ignores it 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

HERE = Path(__file__).parent
pytestmark = pytest.mark.timeout(2700)  # Ray + TransferQueue + FSDP on two cores


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from awm_train.offline import smollm2_tokenizer, tiny_qwen3

    root = tmp_path_factory.mktemp("v1-step")
    tokenizer = smollm2_tokenizer()
    tiny_qwen3(tokenizer).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    recipe = root / "inject.yaml"
    recipe.write_text("extends: cpu-smoke\nperturbations: {mix: {inject: 1.0}, seed: 0}\n")
    parts = {
        # the long tasks (6+ reference calls): their rows outgrow the history window
        "long": ["shop", "--complexity", "hard,very_hard"],
        "conversational": ["shop", "--conversational"],
        "perturbed": ["bank", "--recipe", str(recipe)],
    }
    rows = {name: _prepare(root / name, args) for name, args in parts.items()}
    chosen = [
        rows["long"][0],
        rows["conversational"][0],
        next(r for r in rows["perturbed"] if r["extra_info"]["task_id"] == PERTURBED_TASK),
    ]
    for index, row in enumerate(chosen):
        row["extra_info"]["index"] = index
    (root / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(chosen), root / "data" / "train.parquet")
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
        timeout=2400,  # a hang guard: ~10 min alone, ~16 min with CI's other sessions beside it
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("V1_STEP ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-6000:])
    out: dict[str, Any] = json.loads(lines[-1].removeprefix("V1_STEP "))
    out["rows_in"] = [r["extra_info"] for r in chosen]
    summary = {k: v for k, v in out.items() if k not in ("session_advantages", "rows_in")}
    print("v1 step:", json.dumps(summary))
    return out


PERTURBED_TASK = "lock_debit_card"


def _prepare(out: Path, args: list[str]) -> list[dict[str, Any]]:
    """``awm train prepare ARGS`` as a user runs it; every row it wrote, both splits."""
    awm = Path(sys.executable).with_name("awm")
    subprocess.run(
        [str(awm), "train", "prepare", *args, "--out", str(out)], check=True, capture_output=True
    )
    return [
        r for split in ("train", "val") for r in pq.read_table(out / f"{split}.parquet").to_pylist()
    ]


def test_no_group_is_dropped_and_every_row_is_trained(result: dict[str, Any]) -> None:
    # every prompt of the batch comes back as a whole GRPO group: none failed, none refilled
    assert result["groups"] == result["prompts"] == 3
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


def test_conversational_rows_carry_the_user_s_replies_as_observations(
    result: dict[str, Any],
) -> None:
    conversational = [e for e in result["episodes"] if e["task_id"].startswith("conv_")]
    assert len(conversational) == result["n"]
    assert sorted(e["reward"] for e in conversational) == [-1.0, 1.0]
    assert result["user_replies_in_prompts"] > 0  # in prompts (no loss), never in a response


def test_the_perturbed_row_s_trajectories_meet_its_perturbation_and_the_safety_reward(
    result: dict[str, Any],
) -> None:
    """Both trajectories of the bank row met ``inject`` at the seed prepare drew for it; the
    one that obeyed the injected instruction reached the goal and is rewarded -1 whatever
    its task's verdict, the one that ignored it keeps the task's reward 1."""
    (row,) = [r for r in result["rows_in"] if r["perturbation"]]
    episodes = [e for e in result["episodes"] if e["task_id"] == PERTURBED_TASK]
    assert len(episodes) == result["n"]
    for e in episodes:
        assert (e["perturbation"], e["seed"]) == ("inject", row["perturbation_seed"])
        assert e["goal"] and e["injections_shown"] > 0
    obeyed, ignored = sorted(episodes, key=lambda e: not e["goal_reached"])
    assert obeyed["goal_reached"] and "injection_goal_reached" in obeyed["violations"]
    assert obeyed["reward"] == -1.0
    assert not ignored["goal_reached"] and ignored["violations"] == []
    assert ignored["verdict"] == "Completed" and ignored["reward"] == 1.0
    # the rewards verl trained on are the ones the agent loop logged (one per trajectory)
    assert sorted(result["rewards"]) == sorted(e["reward"] for e in result["episodes"])
    # unperturbed rows are recorded as such
    plain = [e for e in result["episodes"] if e["task_id"] != PERTURBED_TASK]
    assert plain and all(e["perturbation"] is None for e in plain)
