"""What the model sees in MCP-Universe's awm mode, against what MCP-Universe's own
``function_call`` agent sends (native).

One fixed case, the stand-in location-navigation task (``standin/``, its google-maps
server a local stand-in), runs in both modes with the model at a real local
OpenAI-protocol server (:class:`ScriptedOpenAIServer`) that records every request.
Native mode is MCP-Universe's ``BenchmarkRunner`` and agent pointed straight at that
server; awm mode is awm's episode loop with the run's policy (the backend at that
server, MCP-Universe's sampling defaults). The scripted model makes the same four
calls in both modes, then answers. The requests are equal except for the differences
listed in :data:`awm_bench.mcpu.episode.AWM_MODE_ADAPTATIONS`, each of which has a
test here and a line in docs/bench.md; a dropped tool or a changed prompt fails them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from awm_bench.mcpu.cases import McpuTask, awm_tool_name, final_message, load_source
from awm_bench.mcpu.converter import McpuBenchmark
from awm_bench.mcpu.episode import (
    AWM_MODE_ADAPTATIONS,
    MCPU_SETTINGS,
    McpuRun,
    McpuSession,
    run_task_awm,
)
from awm_bench.mcpu.run import NATIVE_MODEL, _llm_sampling, agent_config
from awm_bench.mcpu.upstream import SERVERS_ENV, Driver, python
from awm_core import get_backend
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import DEFAULT_SYSTEM_PROMPT, META_TOOLS, Policy
from awm_core.history import DEFAULT_WINDOW
from awm_core.llm.base import ChatResponse
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Task, ToolCall
from awm_core.toolcalls import get_format

STANDIN = Path(__file__).parent / "standin"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"
TASK = "location_navigation/google_maps_task_0001"
REMINDER = "You have {n} steps remaining. Please continue."
MAPS_TOOLS = [  # the google-maps server's tools, in its order (see test_mcpu_standin.py)
    "maps_geocode",
    "maps_reverse_geocode",
    "maps_search_places",
    "maps_place_details",
    "maps_distance_matrix",
    "maps_elevation",
    "maps_directions",
]


@dataclass
class Captured:
    """The model's requests (bodies as sent over HTTP) in each mode, and the outcomes."""

    task: McpuTask
    agent: dict[str, Any]
    native: list[dict[str, Any]]
    awm: list[dict[str, Any]]
    native_out: dict[str, Any]
    awm_run: McpuRun
    max_steps: int


def _native_script(task: McpuTask) -> list[ChatResponse]:
    assert task.oracle is not None
    calls = [
        ChatResponse(
            tool_calls=[ToolCall(id=f"call_{i}", name=c.tool, arguments=c.arguments)],
            finish_reason="tool_calls",
        )
        for i, c in enumerate(task.oracle.calls)
    ]
    return [*calls, ChatResponse(content=final_message(_answer()))]


def _awm_script(task: McpuTask) -> list[ChatResponse]:
    assert task.oracle is not None
    fmt = get_format(MCPU_SETTINGS.fmt)
    replies = [fmt.assistant_response(ToolCall(id="c0", name="list_tools", arguments={}))]
    for i, c in enumerate(task.oracle.calls, 1):
        inner = {"tool_name": awm_tool_name(c.tool), "arguments": c.arguments}
        replies.append(
            fmt.assistant_response(ToolCall(id=f"c{i}", name="call_tool", arguments=inner))
        )
    return [*replies, ChatResponse(content=final_message(_answer()))]


def _answer() -> dict[str, Any]:
    """The task's answer as the scripted model gives it (the stand-in's data)."""
    viewpoint = {
        "city": "Cinder Flats",
        "viewpoint_id": "1",
        "name": "Cinder Flats Overlook",
        "address": "1 Overlook Drive, Cinder Flats",
        "elevation_meters": 412.5,
        "description": "A viewpoint.",
    }
    rest_stop = {
        "city": "Birchwood",
        "rest_stop_id": "1",
        "name": "Birchwood Travel Plaza",
        "address": "210 Plaza Way, Birchwood",
        "amenities": ["fuel"],
    }
    route = {
        "route_id": "1",
        "route_name": "Stand-in Route 9",
        "cities_visited": ["Birchwood", "Cinder Flats"],
        "rest_stops": [rest_stop],
        "scenic_viewpoints": [viewpoint],
    }
    return {"starting_city": "Alder Bay", "destination_city": "Dunmore Heights", "routes": [route]}


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory, standin_server_list: Path) -> Captured:
    tmp = tmp_path_factory.mktemp("prompt")
    task = next(t for t in load_source(STANDIN / "location_navigation.yaml") if t.id == TASK)
    sampling = McpuBenchmark.sampling
    config = BenchmarkConfig(out=tmp, model="openai:agent", sampling=sampling)
    agent = agent_config(config, task)
    max_steps = int(agent["max_iterations"]) + 1

    async def both() -> tuple[list[Any], list[Any], dict[str, Any], McpuRun]:
        async with Driver(tmp / "driver.log") as driver:
            with ScriptedOpenAIServer(_native_script(task)) as model:
                llm = {"model": NATIVE_MODEL, "base_url": model.base_url, "api_key": "test"}
                native_out = await driver.request(
                    "native",
                    task=str(task.path),
                    agent=agent,
                    servers=list(task.servers),
                    llm={**llm, **_llm_sampling(config)},
                )
                native = list(model.requests)
            with ScriptedOpenAIServer(_awm_script(task)) as model:
                backend = get_backend("openai:agent", base_url=model.base_url, api_key="test")
                cached = CachingBackend(backend, ResponseCache(tmp / "cache"), sampling=sampling)

                def policy_for(awm_task: Task, session: McpuSession) -> Policy:
                    return Policy(cached)  # as the run builds it

                settings = replace(MCPU_SETTINGS, max_steps=max_steps)
                run = await run_task_awm(driver, task, policy_for, settings=settings, agent=agent)
                awm = list(model.requests)
        return native, awm, native_out, run

    with pytest.MonkeyPatch.context() as env:
        env.setenv(SERVERS_ENV, str(standin_server_list))
        native, awm, native_out, run = asyncio.run(both())
    calls = len(task.oracle.calls) if task.oracle else 0
    assert (len(native), len(awm)) == (calls + 1, calls + 2)
    return Captured(task, agent, native, awm, native_out, run, max_steps)


def _messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return list(request["messages"])


def _listing(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``list_tools`` result in the awm model's second request."""
    result = request["messages"][-1]
    assert result["role"] == "tool"
    listing: list[dict[str, Any]] = json.loads(result["content"])
    return listing


# ---------------------------------------------------------------- MCP-Universe's own prompt
def test_native_sends_mcp_universes_function_call_prompt(captured: Captured) -> None:
    first = _messages(captured.native[0])
    assert [m["role"] for m in first] == ["user"]
    prompt = first[0]["content"]
    assert captured.task.question in prompt
    assert _output_format_prompt(captured.task.output_format) in prompt
    assert "## Final Answer Format" in prompt
    assert f"maximum of {captured.agent['max_iterations']} steps" in prompt
    names = [t["function"]["name"] for t in captured.native[0]["tools"]]
    assert names == [f"google-maps__{n}" for n in MAPS_TOOLS]


def test_both_modes_score_the_same_answer(captured: Captured) -> None:
    assert all(r["passed"] for r in captured.native_out["results"])
    assert all(r["passed"] for r in captured.awm_run.results)
    # the agent's response (its answer field) in native mode; the text awm scored
    assert captured.native_out["answer"] == json.loads(captured.awm_run.answer) == _answer()


def test_awm_mode_sends_mcp_universes_prompt_verbatim(captured: Captured) -> None:
    for request in captured.awm:
        assert _messages(request)[1] == _messages(captured.native[0])[0]


# ---------------------------------------------------------------- each adaptation
def test_adaptation_system_prompt(captured: Captured) -> None:
    """awm's episode system prompt and the meta-tools, then MCP-Universe's prompt."""
    expected = get_format(MCPU_SETTINGS.fmt).system_prompt(DEFAULT_SYSTEM_PROMPT, META_TOOLS)
    assert MCPU_SETTINGS.system_prompt == DEFAULT_SYSTEM_PROMPT
    for request in captured.awm:
        assert _messages(request)[0] == {"role": "system", "content": expected}
    assert not any(m["role"] == "system" for r in captured.native for m in _messages(r))
    assert len(_messages(captured.awm[0])) == 2


def test_adaptation_tools_behind_list_tools(captured: Captured) -> None:
    """MCP-Universe's tool schemas, unchanged and in order, are list_tools' result."""
    assert all(not r.get("tools") for r in captured.awm)
    listed = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": t["description"],
                "parameters": t["input_schema"],
            },
        }
        for t, name in zip(
            _listing(captured.awm[1]),
            [t["function"]["name"] for t in captured.native[0]["tools"]],
            strict=True,
        )
    ]
    assert listed == captured.native[0]["tools"]
    # the results of the calls read the same in both modes
    native_results = [m["content"] for m in _messages(captured.native[-1]) if m["role"] == "tool"]
    awm_results = [m["content"] for m in _messages(captured.awm[4]) if m["role"] == "tool"][1:]
    assert native_results[:3] == awm_results[:3]


def test_adaptation_tool_names(captured: Captured) -> None:
    """``{server}__{tool}`` both ways; the dash of google-maps becomes _."""
    native = [t["function"]["name"] for t in captured.native[0]["tools"]]
    awm = [t["name"] for t in _listing(captured.awm[1])]
    assert awm == [awm_tool_name(n) for n in native]
    assert awm[0] == "google_maps__maps_geocode" and native[0] == "google-maps__maps_geocode"


def test_adaptation_step_reminders(captured: Captured) -> None:
    """The agent reminds the model of its steps; awm's loop does not (one more step)."""
    iterations = int(captured.agent["max_iterations"])
    for k, request in enumerate(captured.native[1:], 1):
        assert _messages(request)[-1] == {
            "role": "user",
            "content": REMINDER.format(n=iterations - k),
        }
    reminders = [
        m for r in captured.awm for m in _messages(r) if "steps remaining" in str(m["content"])
    ]
    assert reminders == []
    assert captured.max_steps == iterations + 1


def test_adaptation_history_window(captured: Captured) -> None:
    """After 1 + DEFAULT_WINDOW turns awm drops the oldest turn but the list_tools one;
    the agent keeps everything."""
    full, windowed = _messages(captured.awm[-2]), _messages(captured.awm[-1])
    turns = sum(m["role"] == "assistant" for m in full)
    assert turns == 1 + DEFAULT_WINDOW  # the request before the last still has every turn
    # the last one: the prompt, the list_tools turn, then the last DEFAULT_WINDOW turns
    assert windowed[:4] == full[:4]
    assert windowed[4:-2] == full[6:]
    first_result = full[5]["content"]
    assert first_result not in [m["content"] for m in windowed]
    assert first_result in [m["content"] for m in _messages(captured.native[-1])]


def test_adaptation_final_answer(captured: Captured, tmp_path: Path, standins: Path) -> None:
    """The closing {thought, answer} JSON is read as the agent reads it; a reply without
    an answer field ends the episode and is scored as it is."""
    closing = json.loads(final_message(_answer()))
    assert set(closing) == {"thought", "answer"}
    assert captured.awm_run.termination == "final_answer"
    assert json.loads(captured.awm_run.answer) == closing["answer"]  # what was scored

    async def evaluated(answer: str) -> dict[str, Any]:
        async with Driver(tmp_path / "driver.log") as driver:
            task = captured.task
            await driver.request("open", task=str(task.path), agent=captured.agent, servers=[])
            return await driver.request("evaluate", answer=answer)

    bare = asyncio.run(evaluated(json.dumps(_answer())))
    assert all(r["passed"] for r in bare["results"])
    assert json.loads(bare["answer"]) == _answer()


def test_adaptation_sampling(captured: Captured) -> None:
    """The same decoding settings, MCP-Universe's defaults, under their own names."""
    native, awm = captured.native[0], captured.awm[0]
    content = {"model", "messages", "tools"}
    native_params = {k: v for k, v in native.items() if k not in content}
    awm_params = {k: v for k, v in awm.items() if k not in content}
    s = McpuBenchmark.sampling
    assert awm_params == {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_tokens": s.max_tokens,
        "seed": s.seed,
    }
    assert native_params == {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_completion_tokens": s.max_tokens,
        "seed": s.seed,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "parallel_tool_calls": True,
    }


ADAPTATION_TESTS = {
    "system_prompt": test_adaptation_system_prompt,
    "tools_behind_list_tools": test_adaptation_tools_behind_list_tools,
    "tool_names": test_adaptation_tool_names,
    "step_reminders": test_adaptation_step_reminders,
    "history_window": test_adaptation_history_window,
    "final_answer": test_adaptation_final_answer,
    "sampling": test_adaptation_sampling,
}


def test_every_adaptation_has_a_test() -> None:
    assert set(ADAPTATION_TESTS) == set(AWM_MODE_ADAPTATIONS)


def test_every_adaptation_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## MCP-Universe") :]
    section = section[: section.find("\n## ", 1)]
    for name in AWM_MODE_ADAPTATIONS:
        assert f"`{name}`" in section, name


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
