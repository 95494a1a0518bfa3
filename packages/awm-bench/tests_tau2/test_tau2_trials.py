"""τ²'s pass^k over real trials: `awm bench run tau2 --trials 3 --temperature 0.7` samples
three different runs of a task (in both modes), and pass^k falls below pass^1 where a
task's trials disagree.

The agent and the user simulator are a stochastic OpenAI-protocol server on 127.0.0.1:
it draws its answer at random when asked with a temperature above zero (from the
request's seed), as an OpenAI-compatible server does.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.tau2.run import _mode_summary
from awm_core.cli import build_cli
from awm_core.llm.scripted_server import ScriptedOpenAIServer

WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet")


def _stochastic(body: dict[str, Any]) -> str:
    if not body.get("temperature"):
        return " ".join(WORDS[:5])
    rng = random.Random(body.get("seed"))
    return " ".join(rng.choice(WORDS) for _ in range(5))


@pytest.mark.slow
def test_trials_at_a_positive_temperature_are_distinct_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedOpenAIServer(_stochastic) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        args = ["bench", "run", "tau2", "--model", "openai:agent", "--user-model", "openai:user"]
        args += ["--only", "airline", "--limit", "1", "--max-steps", "4", "--trials", "3"]
        args += ["--temperature", "0.7", "--results", str(tmp_path), "--run", "r"]
        result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    out = tmp_path / "r" / "tau2" / "openai-agent"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sampling"]["temperature"] == 0.7
    assert summary["trials"] == 3
    first_answer: dict[int, set[str]] = {}
    for entry in (out / "cache" / "agent").glob("*/*.json"):
        data = json.loads(entry.read_text())
        if len(data["meta"]["request"]) <= 3:  # the agent's first turn of each trial
            first_answer.setdefault(data["meta"]["trial"], set()).add(data["response"]["content"])
    assert sorted(first_answer) == [0, 1, 2]
    assert len({frozenset(v) for v in first_answer.values()}) >= 2


def test_pass_hat_k_falls_below_pass_1_where_trials_disagree() -> None:
    tasks = [("airline", SimpleNamespace(id="steady")), ("airline", SimpleNamespace(id="flaky"))]
    rewards = {"steady": [1.0, 1.0, 1.0], "flaky": [1.0, 0.0, 1.0]}
    done = {
        f"airline/{task}#{n}": {"reward": reward}
        for task, trials in rewards.items()
        for n, reward in enumerate(trials)
    }
    scores = _mode_summary(tasks, done, 3, 0.0, "user")["domains"]["airline"]
    assert scores["pass^1"] == pytest.approx((1 + 2 / 3) / 2)
    assert scores["pass^2"] == pytest.approx((1 + 1 / 3) / 2)
    assert scores["pass^3"] == pytest.approx(1 / 2)
