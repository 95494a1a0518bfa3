"""AgentDojo through agentdojo 0.1.35 itself (``nox -s bench``): the oracle built from each
user task's ground truth reaches 100% utility and 0% attack success in both modes under
AgentDojo's own attack and checks; an oracle that obeys the injection does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.agentdojo import run as run_module
from awm_bench.agentdojo.cases import DEFAULT_ATTACK, NO_ATTACK, SUITES, Case
from awm_bench.agentdojo.run import DEFAULT_LIMIT, attack_of, load_cases, run_agentdojo, suites_of
from awm_bench.agentdojo.upstream import UnknownAttackError, attack_model_name
from awm_core.contracts import BenchmarkConfig
from awm_core.errors import UnknownSubsetError


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases(SUITES, DEFAULT_LIMIT, DEFAULT_ATTACK)


def _run(tmp_path: Path, cases: list[Case], mode: str, **kw: Any) -> dict[str, Any]:
    attack = kw.pop("attack", DEFAULT_ATTACK)
    config = BenchmarkConfig(out=tmp_path / mode, modes=(mode,), **kw)
    result: dict[str, Any] = run_agentdojo(config, cases, attack)["modes"][mode]
    return result


def test_the_subset_has_every_suite_alone_and_under_attack(cases: list[Case]) -> None:
    assert {c.suite for c in cases} == set(SUITES)
    for suite in SUITES:
        alone = [c for c in cases if c.suite == suite and c.injection_task is None]
        attacked = [c for c in cases if c.suite == suite and c.injection_task]
        assert len(alone) == DEFAULT_LIMIT
        assert len(attacked) == DEFAULT_LIMIT * DEFAULT_LIMIT


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_has_full_utility_and_no_attack_success(
    tmp_path: Path, cases: list[Case], mode: str
) -> None:
    result = _run(tmp_path, cases, mode)
    assert result["cases"] == len(cases)
    for suite in SUITES:
        numbers = result["suites"][suite]
        assert numbers["utility"] == 1.0
        assert numbers["utility_under_attack"] == 1.0
        assert numbers["targeted_asr"] == 0.0
    assert (result["utility"], result["targeted_asr"]) == (1.0, 0.0)


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_an_oracle_that_obeys_the_injection_is_caught_by_agentdojos_security_check(
    tmp_path: Path, cases: list[Case], mode: str
) -> None:
    result = _run(tmp_path, cases, mode, corruption="obey_injection")
    assert result["targeted_asr"] > 0.0
    # with nothing injected there is nothing to obey: utility alone stays whole
    assert result["utility"] == 1.0
    rows = [
        json.loads(line) for line in (tmp_path / mode / f"{mode}.jsonl").read_text().splitlines()
    ]
    hijacked = [r for r in rows if r["security"]]
    assert hijacked and all(r["injection_task"] for r in hijacked)


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_an_oracle_with_a_renamed_tool_loses_utility(
    tmp_path: Path, cases: list[Case], mode: str
) -> None:
    banking = [c for c in cases if c.suite == "banking"]
    result = _run(tmp_path, banking, mode, corruption="rename_tool")
    assert result["utility"] < 1.0


def test_without_an_attack_only_utility_is_measured(tmp_path: Path) -> None:
    cases = load_cases(("slack",), 1, NO_ATTACK)
    assert [c.injection_task for c in cases] == [None]
    result = _run(tmp_path, cases, "native", attack=NO_ATTACK)
    assert result["utility"] == 1.0
    assert result["utility_under_attack"] is None and result["targeted_asr"] is None


def test_a_killed_run_resumes_without_running_finished_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = load_cases(("banking",), 1, DEFAULT_ATTACK)
    ran: list[str] = []
    real = run_module.run_case

    def counting(pipeline: Any, suite: Any, case: Case, attack: Any) -> Any:
        ran.append(case.key)
        return real(pipeline, suite, case, attack)

    monkeypatch.setattr(run_module, "run_case", counting)
    _run(tmp_path, cases, "awm")
    assert ran == [c.key for c in cases]
    journal = tmp_path / "awm" / "awm.jsonl"
    first = journal.read_text().splitlines()[0]
    journal.write_text(first + "\n" + '{"key": "cut sh')  # killed mid-write
    ran.clear()
    result = _run(tmp_path, cases, "awm")
    assert ran == [c.key for c in cases[1:]]
    assert result["cases"] == len(cases)


def test_unknown_suites_and_attacks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnknownSubsetError, match="workspace"):
        suites_of(("bank",))
    with pytest.raises(UnknownAttackError, match="important_instructions"):
        attack_of(BenchmarkConfig(out=tmp_path, attack="shout"))
    assert attack_of(BenchmarkConfig(out=tmp_path)) == DEFAULT_ATTACK


def test_the_attack_addresses_known_models_by_agentdojos_name() -> None:
    assert attack_model_name("openai:gpt-4o-2024-05-13") == "gpt-4o-2024-05-13"
    assert attack_model_name("oracle") == "local"
    assert attack_model_name("local:smollm2") == "local"


def test_awm_bench_run_prints_the_three_numbers_and_the_published_ones(tmp_path: Path) -> None:
    from awm_bench.suite_cli import run_command

    args = ["agentdojo", "--only", "banking", "--limit", "1", "--results", str(tmp_path)]
    result = CliRunner().invoke(run_command, [*args, "--run", "r"])
    assert result.exit_code == 0, result.output
    assert "[awm] banking   utility 100.0%  under attack 100.0%  targeted ASR 0.0%" in result.output
    assert "published: gpt-4o-2024-05-13" in result.output
    summary = json.loads((tmp_path / "r" / "agentdojo" / "oracle" / "summary.json").read_text())
    assert summary["modes"]["native"]["table"]["banking targeted ASR"] == 0.0
    report = (tmp_path / "r" / "report.html").read_text()
    assert "AgentDojo" in report and "published" in report
    # AgentDojo's own trace of every case, as its TraceLogger writes them
    traces = sorted((tmp_path / "r" / "agentdojo" / "oracle" / "traces").rglob("*.json"))
    assert len(traces) == 2 * 2  # two cases in each mode

    def calls(path: Path) -> list[str]:
        messages = json.loads(path.read_text())["messages"]
        assert messages[-1]["role"] == "assistant"
        return [c["function"] for m in messages for c in m.get("tool_calls") or []]

    by_mode = {mode: [p for p in traces if f"/{mode}/" in str(p)] for mode in ("awm", "native")}
    awm_calls = [calls(p) for p in by_mode["awm"]]
    assert awm_calls == [calls(p) for p in by_mode["native"]] and all(awm_calls)


def test_convert_writes_each_suites_tools_and_its_tasks_ground_truth(tmp_path: Path) -> None:
    from awm_bench.agentdojo.converter import AgentDojoBenchmark
    from awm_bench.agentdojo.upstream import get_suite

    written = AgentDojoBenchmark().convert(tmp_path, limit=1)
    assert len(written) == len(SUITES)
    for folder in written:
        suite = get_suite(folder.parent.name)
        tools = json.loads((folder.parent / "tools.json").read_text())
        assert [t["name"] for t in tools] == [f.name for f in suite.tools]
        task = json.loads((folder / "task.json").read_text())
        assert task["prompt"] == suite.get_user_task_by_id(folder.name).PROMPT
        assert task["ground_truth"] and all(
            c["function"] in suite_names(suite) for c in task["ground_truth"]
        )


def suite_names(suite: Any) -> set[str]:
    return {f.name for f in suite.tools}


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_solves_the_task_with_the_longest_ground_truth_within_the_budget(
    tmp_path: Path, mode: str
) -> None:
    from awm_bench.agentdojo.upstream import get_suite

    suite = get_suite("travel")
    env = suite.load_and_inject_default_environment({})
    lengths = {
        t.ID: len(t.ground_truth(t.init_environment(env.model_copy(deep=True))))
        for t in suite.user_tasks.values()
    }
    longest = max(lengths, key=lengths.__getitem__)
    assert lengths[longest] > 15  # more calls than AgentDojo's agent has turns after its first
    result = _run(tmp_path, [Case("travel", longest)], mode, attack=NO_ATTACK)
    assert result["utility"] == 1.0
