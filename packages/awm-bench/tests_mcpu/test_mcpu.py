"""MCP-Universe through mcpuniverse 1.1.3 itself (``nox -s bench``, its own venv found via
AWM_MCPU_PYTHON): the oracle built from expected calls passes MCP-Universe's evaluators
in both modes, a corrupted one does not, and a model behind awm's OpenAI server runs
in both modes and resumes from its cache."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.mcpu.cases import TASKS_DIR, McpuTask, load_offline
from awm_bench.mcpu.run import TASKS_ENV, run_mcpu
from awm_bench.mcpu.upstream import Driver, available, python
from awm_core.contracts import BenchmarkConfig
from awm_core.llm.base import ChatResponse
from awm_core.llm.http_server import BackgroundServer
from awm_core.llm.scripted import ScriptedBackend
from awm_core.llm.serve import build_backend_app
from awm_core.models import Message


@pytest.fixture(autouse=True, scope="module")
def _mcpuniverse_venv_works() -> None:
    """These tests are collected only where AWM_MCPU_PYTHON names the benchmark's venv
    (see conftest.py); a broken venv there fails them, it never skips them silently."""
    problem = available()
    if problem is not None:
        pytest.fail(f"AWM_MCPU_PYTHON is set, but MCP-Universe cannot be driven: {problem}")


@pytest.fixture(scope="module")
def tasks() -> list[McpuTask]:
    return load_offline()


def _run(tmp_path: Path, tasks: list[McpuTask], mode: str, **kw: Any) -> dict[str, Any]:
    summary = run_mcpu(BenchmarkConfig(out=tmp_path / mode, modes=(mode,), **kw), tasks)
    result: dict[str, Any] = summary["modes"][mode]
    return result


def _rows(tmp_path: Path, mode: str) -> list[dict[str, Any]]:
    lines = (tmp_path / mode / f"{mode}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_passes_every_mcp_universe_evaluator(
    tmp_path: Path, tasks: list[McpuTask], mode: str
) -> None:
    result = _run(tmp_path, tasks, mode)
    failed = [r for r in _rows(tmp_path, mode) if not r["success"]]
    assert failed == []
    assert result["correct"] == result["cases"] == len(tasks) == 8
    assert all(d["SR"] == 1.0 and d["AE"] == 1.0 for d in result["domains"].values())
    # the calls went to MCP-Universe's servers under its own names
    calls = [c["tool"] for r in _rows(tmp_path, mode) for c in r["calls"]]
    assert "calculator__calculate" in calls and "date__get_date_in_timezone" in calls


@pytest.mark.parametrize(
    ("mode", "corruption"), [("awm", "rename_tool"), ("native", "drop_argument")]
)
def test_a_corrupted_oracle_fails_mcp_universes_evaluators(
    tmp_path: Path, tasks: list[McpuTask], mode: str, corruption: str
) -> None:
    result = _run(tmp_path, tasks, mode, corruption=corruption)
    # a renamed tool fails every task; a dropped argument every task whose first call has one
    expected = 0 if corruption == "rename_tool" else 1  # date_task_0001's call has none
    assert result["correct"] == expected < result["cases"]


def test_the_awm_episode_sees_mcp_universes_tools_and_output_format_prompt(
    tmp_path: Path, tasks: list[McpuTask]
) -> None:
    task = next(t for t in tasks if t.domain == "multi_server")

    async def opened() -> dict[str, Any]:
        async with Driver(tmp_path / "driver.log") as driver:
            answer = await driver.request(
                "open", task=str(task.path), agent=task.agent, servers=list(task.servers)
            )
            await driver.request("evaluate", answer="")
            return answer

    answer = asyncio.run(opened())
    assert [t["name"] for t in answer["tools"]] == ["calculator__calculate", "echo__echo_tool"]
    # the instruction is the function_call agent's own prompt: the benchmark's role, the
    # question, MCP-Universe's output-format prompt
    assert answer["request"]["messages"] == [{"role": "user", "content": answer["instruction"]}]
    assert task.agent["instruction"] in answer["instruction"]
    assert task.question in answer["instruction"]
    assert _output_format_prompt(task.output_format) in answer["instruction"]


def _output_format_prompt(output_format: dict[str, Any]) -> str:
    """MCP-Universe's own output-format prompt, asked of its venv."""
    code = (
        "import json, sys; from mcpuniverse.agent.base import BaseAgent; "
        "print(BaseAgent._get_output_format_prompt(json.loads(sys.argv[1])), end='')"
    )
    done = subprocess.run(
        [str(python()), "-I", "-c", code, json.dumps(output_format)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_any_mcp_universe_task_folder_runs_with_its_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "tasks"
    shutil.copytree(TASKS_DIR / "echo", folder / "echo")
    oracle = json.loads((TASKS_DIR / "oracle.json").read_text())
    mine = {k: v for k, v in oracle.items() if k.startswith("echo/")}
    (folder / "oracle.json").write_text(json.dumps(mine))
    monkeypatch.setenv(TASKS_ENV, str(folder))
    from awm_core.registry import get_benchmark

    config = BenchmarkConfig(out=tmp_path / "out", modes=("native",))
    summary = get_benchmark("mcpuniverse").run(config)
    assert summary["modes"]["native"]["correct"] == summary["modes"]["native"]["cases"] == 2
    assert summary["subset"].startswith(str(folder))


def _answerer(messages: list[Message]) -> ChatResponse:
    """Answers calculator_task_0001 without tools, in MCP-Universe's final-answer format
    (the prompt both modes show the model)."""
    answer = {"total_cost": 2465}
    assert any("## Final Answer Format" in m.content for m in messages)  # in both modes
    return ChatResponse(content=json.dumps({"thought": "348*7+29", "answer": answer}))


def test_a_model_behind_awms_openai_server_is_scored_in_both_modes_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awm_core.cli import build_cli

    awm = build_cli()
    backend = ScriptedBackend([_answerer] * 100, name="scripted")
    with BackgroundServer(build_backend_app(backend, model_name="answerer")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
        args = ["bench", "run", "mcpuniverse", "--model", "openai:answerer", "--limit", "1"]
        args += ["--only", "calculator", "--results", str(tmp_path), "--run", "r1"]
        first = CliRunner().invoke(awm, args)
        assert first.exit_code == 0, first.output
        out = tmp_path / "r1" / "mcpuniverse" / "openai-answerer"
        summary = json.loads((out / "summary.json").read_text())
        assert {m: s["correct"] for m, s in summary["modes"].items()} == {"awm": 1, "native": 1}
        asked = len(backend.calls)
        assert asked == 2  # one answer per mode
        for mode in ("awm", "native"):  # kill the run after its last case
            (out / f"{mode}.jsonl").write_text("")
        again = CliRunner().invoke(awm, args)
        assert again.exit_code == 0, again.output
        assert len(backend.calls) == asked  # every answer came from the cache
    report = json.loads((tmp_path / "r1" / "report.json").read_text())
    assert report["benchmarks"]["mcpuniverse"][0]["modes"]["native"]["table"]["calculator SR"] == 1
    assert "MCP-Universe" in (tmp_path / "r1" / "report.html").read_text()
