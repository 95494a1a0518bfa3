"""The 2-step version of the ``cpu-learn`` benchmark (the run of conftest.py): every joint of
the learning-curve experiment, so the committed curve can be reproduced by its command.

Two steps cannot show learning; they show that the figures the curve is made of are
measured: per-step trajectories from the episode log, verl's own loss and timings,
an exported checkpoint, and the same held-out evaluation of the base and trained model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def figures(run: subprocess.CompletedProcess[str], cpu_smoke_dir: Path) -> dict[str, Any]:
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    data: dict[str, Any] = json.loads((cpu_smoke_dir / "learning.json").read_text())
    return data


def test_each_step_has_its_group_of_trajectories_and_verl_s_figures(
    figures: dict[str, Any],
) -> None:
    curve = figures["curve"]
    assert [row["step"] for row in curve] == [1, 2]
    for row in curve:
        assert row["trajectories"] == 2  # 1 task x 2 samples (data.train_batch_size x --samples)
        assert -1.0 <= row["reward"] <= 1.0
        assert 0.0 <= row["format_error"] <= 1.0 and 0.0 <= row["completed"] <= 1.0
        assert row["turns"] >= 1 and row["response_tokens"] > 0
        assert row["step_s"] > 0 and row["gen_s"] > 0 and row["update_actor_s"] > 0
        assert "pg_loss" in row
        assert sum(row["first_tools"].values()) == 2  # one first tool (or "?") per trajectory


def test_the_per_kind_figures_count_every_trajectory_once(figures: dict[str, Any]) -> None:
    halves = [half for kind in figures["by_kind"].values() for half in kind.values()]
    assert sum(h["trajectories"] for h in halves) == 4
    assert set(figures["by_kind"]) <= {"switch", "brightness"}  # lights' kinds of request
    for h in halves:
        assert sum(h["first_tool"].values()) == h["trajectories"]
        assert 0.0 <= h["completed"] <= 1.0 and 0.0 <= h["format_error"] <= 1.0


def test_the_episode_log_holds_every_trajectory_with_the_recipe_s_settings(
    figures: dict[str, Any], cpu_smoke_dir: Path
) -> None:
    # `figures` runs the benchmark first: pytest-randomly may order this test before the others
    lines = [
        json.loads(x) for x in (cpu_smoke_dir / "ckpt" / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 4
    assert {line["step"] for line in lines} == {0, 1}  # the weights each was sampled with
    assert {line["env_id"] for line in lines} == {"lights"}
    # the recipe's checks reached every trajectory: SmolLM2 never thinks, and under the
    # paper's require_reasoning every one of them would end as a format error
    violations = {line["violation"] for line in lines}
    assert "empty_reasoning" not in violations, lines
    assert all(
        (line["violation"] is None) == (line["termination"] != "format_error") for line in lines
    )
    assert all(len(line["responses"]) == line["turns"] for line in lines)


def test_base_and_trained_models_are_evaluated_the_same_way(figures: dict[str, Any]) -> None:
    for side, folder in (("before", "model"), ("after", "trained")):
        for mode, temperature, episodes in (("sampled", 0.7, 1), ("greedy", 0.0, 1)):
            result = figures[side][mode]
            assert result["model"] == folder and result["tasks"] == 1
            assert result["temperature"] == temperature and result["episodes"] == episodes
            assert 0.0 <= result["success_rate"] <= 1.0
    assert figures["timings_s"]["train_s"] > 0 and figures["timings_s"]["export_s"] > 0
