"""A paper domain's task files, run offline: location navigation (MCP-Universe's
``google-maps`` server) and a weather + google-maps information-retrieval task.

``standin/`` holds a benchmark YAML and two tasks written here in exactly the format
of MCP-Universe's location-navigation tasks (``category``, ``question``,
``output_format``, ``use_specified_server``, ``mcp_servers``, ``evaluators`` with
``func`` / ``op`` / ``value`` / ``op_args``; the Google Maps checks
``google_maps.city_name_match``, ``validate_elevation_meters``,
``check_places_and_ratings``... among them), and local stand-ins for the two servers
that speak their tool names and input schemas. ``AWM_MCPU_SERVERS`` swaps them in for
every MCP manager of the driver, so the agent, the runner and the evaluators (which
call the maps server themselves) all reach the stand-ins: the file format, the server
wiring and MCP-Universe's evaluator path are proven without a network or a key.
Without the swap the same files stop with a typed error naming the missing key.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from awm_bench.mcpu.cases import McpuTask, load_source
from awm_bench.mcpu.run import TASKS_ENV, run_mcpu
from awm_bench.mcpu.services import McpuServicesMissingError
from awm_bench.mcpu.upstream import SERVERS_ENV, Driver, python
from awm_core.contracts import BenchmarkConfig

STANDIN = Path(__file__).parent / "standin"
BENCHMARK = STANDIN / "location_navigation.yaml"

# The task-file fields of MCP-Universe's location-navigation tasks (as its repository's
# mcpuniverse/benchmark/configs/mcpuniverse/location_navigation/*.json spell them)
PAPER_TASK_KEYS = {
    "category",
    "question",
    "output_format",
    "use_specified_server",
    "mcp_servers",
    "evaluators",
}

# @modelcontextprotocol/server-google-maps (the server MCP-Universe's server list starts
# for google-maps): its tool names and input schemas, descriptions left out, as its
# source (src/google-maps/index.ts in modelcontextprotocol/servers) defines them
_POINT = {
    "type": "object",
    "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
}
_MODE = {"type": "string", "enum": ["driving", "walking", "bicycling", "transit"]}
GOOGLE_MAPS_TOOLS = {
    "maps_geocode": {
        "type": "object",
        "properties": {"address": {"type": "string"}},
        "required": ["address"],
    },
    "maps_reverse_geocode": {
        "type": "object",
        "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}},
        "required": ["latitude", "longitude"],
    },
    "maps_search_places": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "location": _POINT,
            "radius": {"type": "number"},
        },
        "required": ["query"],
    },
    "maps_place_details": {
        "type": "object",
        "properties": {"place_id": {"type": "string"}},
        "required": ["place_id"],
    },
    "maps_distance_matrix": {
        "type": "object",
        "properties": {
            "origins": {"type": "array", "items": {"type": "string"}},
            "destinations": {"type": "array", "items": {"type": "string"}},
            "mode": _MODE,
        },
        "required": ["origins", "destinations"],
    },
    "maps_elevation": {
        "type": "object",
        "properties": {
            "locations": {
                "type": "array",
                "items": {**_POINT, "required": ["latitude", "longitude"]},
            }
        },
        "required": ["locations"],
    },
    "maps_directions": {
        "type": "object",
        "properties": {
            "origin": {"type": "string"},
            "destination": {"type": "string"},
            "mode": _MODE,
        },
        "required": ["origin", "destination"],
    },
}


@pytest.fixture(scope="module")
def tasks() -> list[McpuTask]:
    return load_source(BENCHMARK)


def _rows(out: Path, mode: str) -> dict[str, dict[str, Any]]:
    lines = (out / f"{mode}.jsonl").read_text().splitlines()
    return {row["task_id"]: row for row in map(json.loads, lines)}


def _upstream(code: str, *args: str) -> Any:
    """Run ``code`` in mcpuniverse's venv; what it prints, as JSON."""
    done = subprocess.run(
        [str(python()), "-I", "-c", code, *args], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_task_files_are_in_the_paper_domains_format(tasks: list[McpuTask]) -> None:
    assert [t.domain for t in tasks] == ["location_navigation", "multi_server"]
    for task in tasks:
        data = json.loads(task.path.read_text())
        assert set(data) == PAPER_TASK_KEYS, task.id
        assert data["use_specified_server"] is True
    # MCP-Universe's own loaders accept them as they are: the benchmark YAML, each task
    # (its TaskConfig, and an Evaluator per evaluator, which rejects an unknown func or op)
    code = (
        "import json, sys\n"
        "from mcpuniverse.benchmark.runner import BenchmarkRunner\n"
        "from mcpuniverse.benchmark.task import Task\n"
        "runner = BenchmarkRunner(sys.argv[1])\n"
        "out = {'agents': [a['spec']['type'] for a in runner._agent_configs if a['kind'] == 'agent']}\n"
        "for path in sys.argv[2:]:\n"
        "    task = Task(path)\n"
        "    out[path] = [[e._config.func, e._config.op] for e in task.get_evaluators()]\n"
        "    out[path + ':servers'] = [s['name'] for s in task.get_mcp_servers()]\n"
        "print(json.dumps(out))\n"
    )
    loaded = _upstream(code, str(BENCHMARK), *(str(t.path) for t in tasks))
    assert loaded["agents"] == ["function_call"]
    navigation, weather = (loaded[str(t.path)] for t in tasks)
    assert len(navigation) == 11 and len(weather) == 7
    ops = {op for _, op in navigation + weather}
    assert {"google_maps.validate_elevation_meters", "google_maps.check_places_and_ratings"} <= ops
    assert loaded[str(tasks[0].path) + ":servers"] == ["google-maps"]
    assert loaded[str(tasks[1].path) + ":servers"] == ["google-maps", "weather"]


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_passes_every_evaluator_through_the_standins(
    tmp_path: Path, tasks: list[McpuTask], standins: Path, mode: str
) -> None:
    summary = run_mcpu(BenchmarkConfig(out=tmp_path / mode, modes=(mode,)), tasks)
    rows = _rows(tmp_path / mode, mode)
    failed = {k: [e for e in r["evaluations"] if not e["passed"]] for k, r in rows.items()}
    assert all(not f for f in failed.values()), failed
    assert summary["modes"][mode]["correct"] == 2
    navigation, weather = (rows[t.id] for t in tasks)
    assert len(navigation["evaluations"]) == 11 and len(weather["evaluations"]) == 7
    # the calls reached the servers under MCP-Universe's names, both servers of the
    # multi-server task among them
    assert [c["tool"] for c in navigation["calls"]] == [
        "google-maps__maps_search_places",
        "google-maps__maps_elevation",
        "google-maps__maps_directions",
        "google-maps__maps_search_places",
    ]
    assert "weather__get_forecast" in [c["tool"] for c in weather["calls"]]
    assert not any(c["error"] for r in rows.values() for c in r["calls"])
    # the Google Maps checks asked the maps server themselves (MCP-Universe logs each one)
    log = (tmp_path / mode / "mcpuniverse-driver.log").read_text()
    assert "Cinder Flats Overlook, Cinder Flats, 1 Overlook Drive" in log


@pytest.mark.parametrize(
    ("mode", "corruption"), [("awm", "drop_argument"), ("native", "rename_tool")]
)
def test_a_corrupted_oracle_fails_the_standin_tasks(
    tmp_path: Path, tasks: list[McpuTask], standins: Path, mode: str, corruption: str
) -> None:
    config = BenchmarkConfig(out=tmp_path / mode, modes=(mode,), corruption=corruption)
    summary = run_mcpu(config, tasks)
    assert summary["modes"][mode]["correct"] == 0
    # the first call fails, and the answers built from it fail MCP-Universe's checks
    failed = {
        e["op"]
        for r in _rows(tmp_path / mode, mode).values()
        for e in r["evaluations"]
        if not e["passed"]
    }
    assert {
        "google_maps.validate_elevation_meters",
        "google_maps.check_places_and_ratings",
    } <= failed


def _strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


def _listed(tmp_path: Path, servers: list[str], log: str) -> list[dict[str, Any]]:
    """The tools the driver's function_call agent lists for a task on ``servers``."""
    task = tmp_path / f"{log}.json"
    task.write_text(
        json.dumps(
            {
                "question": "List the tools.",
                "use_specified_server": True,
                "mcp_servers": [{"name": s} for s in servers],
                "evaluators": [{"func": "raw"}],
            }
        )
    )

    async def listed() -> list[dict[str, Any]]:
        async with Driver(tmp_path / f"{log}.log") as driver:
            opened = await driver.request("open", task=str(task), agent={}, servers=[])
            await driver.request("evaluate", answer="")
            return list(opened["tools"])

    return asyncio.run(listed())


def test_the_standins_speak_the_real_servers_tool_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, standin_server_list: Path
) -> None:
    # weather: MCP-Universe's own server lists its tools without a network
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    real = _listed(tmp_path, ["weather"], "real")
    monkeypatch.setenv(SERVERS_ENV, str(standin_server_list))
    stand_in = _listed(tmp_path, ["weather", "google-maps"], "standin")
    assert [t["name"] for t in real] == ["weather__get_alerts", "weather__get_forecast"]
    assert [(t["name"], t["input_schema"]) for t in stand_in[:2]] == [
        (t["name"], t["input_schema"]) for t in real
    ]
    # google-maps: the published server's names and schemas, in its order
    maps = {t["name"].removeprefix("google-maps__"): t["input_schema"] for t in stand_in[2:]}
    assert list(maps) == list(GOOGLE_MAPS_TOOLS)
    assert {k: _strip_descriptions(v) for k, v in maps.items()} == GOOGLE_MAPS_TOOLS


def test_a_real_domain_without_its_key_stops_with_a_typed_error(
    tmp_path: Path, tasks: list[McpuTask], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv("GOOGLE_MAPS_API_KEY", raising=False)
    with pytest.raises(McpuServicesMissingError) as raised:
        run_mcpu(BenchmarkConfig(out=tmp_path / "run"), tasks)
    assert raised.value.variables == ["GOOGLE_MAPS_API_KEY"]
    assert raised.value.servers == ["google-maps"]
    assert [n.task_id for n in raised.value.needs] == [t.id for t in tasks]
    assert not (tmp_path / "run" / "awm.jsonl").exists()  # nothing ran


def test_the_cli_names_what_is_missing_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from awm_core.cli import main

    monkeypatch.delenv(SERVERS_ENV, raising=False)
    monkeypatch.delenv(TASKS_ENV, raising=False)
    monkeypatch.delenv("GOOGLE_MAPS_API_KEY", raising=False)
    monkeypatch.delenv("AWM_TEST_UNSET_ACCOUNT", raising=False)
    # one task per kind of gap: a server that needs a key, a server whose command is not
    # installed, a server MCP-Universe does not know, a variable its question uses
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"sandbox": {"stdio": {"command": "awm-no-such-command"}}}))
    monkeypatch.setenv(SERVERS_ENV, str(servers))
    folder = tmp_path / "tasks" / "gaps"
    folder.mkdir(parents=True)
    for name, server, question in (
        ("maps", "google-maps", "Where is Alder Bay?"),
        ("sandbox", "sandbox", "Run it."),
        ("unknown", "no-such-server", "Hello."),
        ("account", "echo", "Star a repository of {{AWM_TEST_UNSET_ACCOUNT}}."),
    ):
        task = {
            "question": question,
            "mcp_servers": [{"name": server}],
            "evaluators": [{"func": "raw"}],
        }
        (folder / f"{name}.json").write_text(json.dumps(task))
    args = [
        "bench",
        "run",
        "mcpuniverse",
        "--tasks",
        str(folder.parent),
        "--results",
        str(tmp_path),
    ]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--run", "gaps"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 4 MCP-Universe task(s) need services")
    assert "Traceback" not in err
    assert "server google-maps (the agent's servers): set GOOGLE_MAPS_API_KEY" in err
    assert "server sandbox (the agent's servers): command awm-no-such-command not found" in err
    assert "no server named no-such-server" in err
    assert "the task: set AWM_TEST_UNSET_ACCOUNT" in err
