"""MCP-Universe converter logic that needs no mcpuniverse: the task files, the oracle
built from expected calls, corruptions, scores, and the plugin's registration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from awm_bench.mcpu.cases import (
    DOMAINS,
    TASKS_DIR,
    ExpectedCall,
    answer_text,
    awm_tool_name,
    corrupt_calls,
    domain_scores,
    evaluator_score,
    fill_answer,
    final_message,
    load_benchmark,
    load_folder,
    load_offline,
    load_source,
    select,
    task_success,
)
from awm_bench.mcpu.oracle import OracleBackend, OraclePolicy, reference_steps
from awm_bench.mcpu.run import mode_summary
from awm_core.errors import UnknownSubsetError
from awm_core.models import Complexity, Message, Task
from awm_core.toolcalls import get_format

OFFLINE_SERVERS = {"calculator", "echo", "date"}


def test_the_offline_set_has_eight_tasks_in_four_domains_each_with_an_oracle() -> None:
    tasks = load_offline()
    assert len(tasks) == 8
    assert [t.domain for t in tasks] == sorted(
        [t.domain for t in tasks], key=lambda d: DOMAINS.index(d)
    )
    assert {t.domain for t in tasks} == set(DOMAINS)
    assert all(t.oracle is not None and t.oracle.calls for t in tasks)


def test_offline_tasks_use_only_servers_that_run_without_a_network() -> None:
    for task in load_offline():
        servers = {s["name"] for s in task.servers}
        assert servers <= OFFLINE_SERVERS, task.id
        assert task.oracle is not None
        # each expected call names one of the agent's servers, MCP-Universe style
        assert {c.tool.split("__", 1)[0] for c in task.oracle.calls} <= servers, task.id


def test_offline_tasks_are_labelled_awm_authored_in_mcp_universes_format() -> None:
    for path in TASKS_DIR.glob("*/*.json"):
        data = json.loads(path.read_text())
        assert "awm-authored" in data["_source"], path
        assert {"question", "mcp_servers", "evaluators", "output_format"} <= set(data), path
        for evaluator in data["evaluators"]:
            assert evaluator["func"] and evaluator["op"], path
    assert "not tasks from the MCP-Universe paper" in (TASKS_DIR / "README.md").read_text()


def test_a_benchmark_yaml_gives_each_task_its_agent_config() -> None:
    tasks = load_benchmark(TASKS_DIR / "multi_server.yaml")
    assert [t.id for t in tasks] == ["multi_server/multi_server_task_0001"]
    assert tasks[0].agent["max_iterations"] == 20
    assert [s["name"] for s in tasks[0].servers] == ["calculator", "echo"]
    assert "{\n" not in tasks[0].question and tasks[0].output_format


def test_benchmark_task_paths_resolve_like_mcp_universes_configs_folder(tmp_path: Path) -> None:
    # upstream writes `mcpuniverse/DOMAIN/task.json` relative to configs/, one level up
    configs = tmp_path / "configs"
    (configs / "mcpuniverse" / "calculator").mkdir(parents=True)
    shutil.copy(
        TASKS_DIR / "calculator" / "calculator_task_0001.json",
        configs / "mcpuniverse" / "calculator" / "calculator_task_0001.json",
    )
    yaml_text = (TASKS_DIR / "calculator.yaml").read_text()
    yaml_text = yaml_text.split("  tasks:")[0] + (
        "  tasks:\n    - mcpuniverse/calculator/calculator_task_0001.json\n"
    )
    (configs / "mcpuniverse" / "calc.yaml").write_text(yaml_text)
    tasks = load_source(configs / "mcpuniverse" / "calc.yaml")
    assert [t.domain for t in tasks] == ["calculator"]
    assert tasks[0].oracle is None  # no oracle.json there: the oracle cannot answer


def test_a_folder_of_task_files_runs_each_task_on_its_own_servers(tmp_path: Path) -> None:
    shutil.copytree(TASKS_DIR / "echo", tmp_path / "echo")
    tasks = load_folder(tmp_path)
    assert [t.id for t in tasks] == ["echo/echo_task_0001", "echo/echo_task_0002"]
    assert tasks[0].agent == {} and [s["name"] for s in tasks[0].servers] == ["echo"]


def test_select_keeps_the_first_tasks_of_the_domains_asked_for() -> None:
    tasks = load_offline()
    picked = select(tasks, ("calculator",), 1)
    assert [t.id for t in picked] == ["calculator/calculator_task_0001"]
    assert len(select(tasks, (), None)) == 8
    with pytest.raises(UnknownSubsetError):
        select(tasks, ("location_navigation",), None)


def test_the_oracle_answer_is_built_from_the_call_results() -> None:
    answer = {"product": "$result[0]", "echoed": "$result[1]", "note": "got $result[0]!"}
    filled = fill_answer(answer, ["1728", "total=1728"])
    assert filled == {"product": 1728, "echoed": "total=1728", "note": "got 1728!"}
    # a call that failed (or never ran) gives a wrong answer, never the ground truth
    assert fill_answer(answer, ["Error: no tool"]) == {
        "product": "Error: no tool",
        "echoed": "",
        "note": "got Error: no tool!",
    }
    assert fill_answer([12, "$result[0]"], ["2026-01-02"]) == [12, "2026-01-02"]


def test_answers_are_sent_as_mcp_universes_agent_sends_them() -> None:
    assert answer_text({"a": 1}) == '{"a": 1}'
    assert answer_text("plain") == "plain"
    assert json.loads(final_message({"a": 1}))["answer"] == {"a": 1}


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("rename_tool", [("echo__echo_tool_renamed", {"text": "x"}), ("date__now", {})]),
        ("drop_argument", [("echo__echo_tool", {}), ("date__now", {})]),
        (None, [("echo__echo_tool", {"text": "x"}), ("date__now", {})]),
    ],
)
def test_corruptions_break_the_first_call(
    how: str | None, expected: list[tuple[str, dict[str, str]]]
) -> None:
    calls = [ExpectedCall("echo__echo_tool", {"text": "x"}), ExpectedCall("date__now")]
    assert [(c.tool, c.arguments) for c in corrupt_calls(calls, how)] == expected


def test_drop_argument_skips_calls_without_arguments() -> None:
    calls = [ExpectedCall("date__now"), ExpectedCall("echo__echo_tool", {"text": "x"})]
    assert corrupt_calls(calls, "drop_argument")[1].arguments == {}


def test_tool_names_with_dashes_become_awm_identifiers() -> None:
    assert awm_tool_name("calculator__calculate") == "calculator__calculate"
    assert awm_tool_name("google-maps__maps_geocode") == "google_maps__maps_geocode"
    assert awm_tool_name("3d__x") == "_3d__x"


def test_a_task_succeeds_only_when_every_evaluator_passes() -> None:
    assert task_success([{"passed": True}, {"passed": True}])
    assert not task_success([{"passed": True}, {"passed": False}])
    assert not task_success([])
    assert evaluator_score([{"passed": True}, {"passed": False}]) == 0.5


def test_scores_per_domain_and_overall() -> None:
    rows = [
        {"domain": "echo", "success": True, "evaluator_score": 1.0},
        {"domain": "echo", "success": False, "evaluator_score": 0.5},
        {"domain": "date", "success": True, "evaluator_score": 1.0},
    ]
    assert domain_scores(rows)["echo"] == {"tasks": 2, "SR": 0.5, "AE": 0.75}
    summary = mode_summary(rows, 1.0)
    assert summary["table"]["echo SR"] == 0.5 and summary["table"]["date AE"] == 1.0
    assert summary["headline"] == pytest.approx(2 / 3)
    assert summary["correct"] == 2 and summary["cases"] == 3


async def test_the_native_oracle_makes_each_expected_call_then_answers() -> None:
    backend = OracleBackend(
        [ExpectedCall("calculator__calculate", {"expression": "144 * 12"})],
        {"product": "$result[0]"},
    )
    prompt = [Message(role="user", content="task")]
    first = await backend.chat(prompt)
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("calculator__calculate", {"expression": "144 * 12"})
    ]
    history = [
        *prompt,
        Message(role="assistant", tool_calls=first.tool_calls),
        Message(role="tool", content="1728", tool_call_id="call_0"),
        Message(role="user", content="You have 19 steps remaining. Please continue."),
    ]
    last = await backend.chat(history)
    assert not last.tool_calls
    assert json.loads(last.content)["answer"] == {"product": 1728}


async def test_the_awm_oracle_lists_tools_calls_then_answers_from_the_results() -> None:
    calls = [ExpectedCall("echo__echo_tool", {"text": "hi"})]
    task = Task(
        id="t",
        instruction="echo hi",
        complexity=Complexity.EASY,
        reference_solution=reference_steps(calls),
    )
    results: list[str] = []
    policy = OraclePolicy(task, {"echoed": "$result[0]"}, results)
    fmt = get_format("hermes")
    assert "list_tools" in (await policy.respond([], fmt=fmt, tools=None)).content
    assert "echo__echo_tool" in (await policy.respond([], fmt=fmt, tools=None)).content
    results.append("hi")  # what the session saw the call return
    final = await policy.respond([], fmt=fmt, tools=None)
    assert final.content.endswith('{"echoed": "hi"}')


def test_convert_writes_task_agent_and_oracle_files(tmp_path: Path) -> None:
    from awm_bench.mcpu.converter import McpuBenchmark

    folders = McpuBenchmark().convert(tmp_path, limit=1)
    assert [f.relative_to(tmp_path).parts[0] for f in folders] == list(DOMAINS)
    for folder in folders:
        assert json.loads((folder / "task.json").read_text())["question"]
        assert json.loads((folder / "agent.json").read_text())["servers"]
        assert json.loads((folder / "oracle.json").read_text())["calls"]


def test_the_plugin_says_how_to_get_mcpuniverses_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awm_core.registry import get_benchmark

    monkeypatch.setenv("AWM_MCPU_PYTHON", str(tmp_path / "missing" / "python"))
    suite = get_benchmark("mcpuniverse")
    problem = suite.available()
    assert problem is not None
    assert "AWM_MCPU_PYTHON" in problem and "awm_bench.mcpu.upstream --create" in problem


def test_the_driver_imports_nothing_of_awm() -> None:
    # it runs in mcpuniverse's venv, where awm is not installed
    source = (TASKS_DIR.parent / "driver.py").read_text()
    assert "awm_" not in "".join(
        line for line in source.splitlines() if line.lstrip().startswith(("import", "from"))
    )


def test_the_venv_helper_has_help_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from awm_bench.mcpu.upstream import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0 and "--create [PATH]" in capsys.readouterr().out
    monkeypatch.setenv("AWM_MCPU_PYTHON", str(tmp_path / "nowhere" / "python"))
    assert main([]) == 1
    assert "upstream --create" in capsys.readouterr().out
