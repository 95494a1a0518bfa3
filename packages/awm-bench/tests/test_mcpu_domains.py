"""MCP-Universe's paper domains, the logic that needs no mcpuniverse: the oracle's paths
into call results, the missing-services error and the awm-mode adaptation list (the
runs themselves are in ``tests_mcpu``, in mcpuniverse's venv)."""

from __future__ import annotations

import ast
from pathlib import Path

from awm_bench.mcpu.cases import TASKS_DIR, fill_answer
from awm_bench.mcpu.episode import AWM_MODE_ADAPTATIONS
from awm_bench.mcpu.services import (
    EVALUATOR_NEEDS,
    McpuServicesMissingError,
    TaskNeeds,
    parse_needs,
)
from awm_bench.mcpu.upstream import SERVERS_ENV

DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"
PLACES = '{"places": [{"name": "A", "rating": 4.5, "location": {"lat": 1.5}}, {"name": "B"}]}'


def test_the_oracle_picks_values_out_of_a_calls_json_result() -> None:
    answer = {
        "name": "$result[0].places[1].name",
        "lat": "$result[0].places[0].location.lat",
        "line": "rated $result[0].places[0].rating of 5",
        "whole": "$result[1]",
    }
    assert fill_answer(answer, [PLACES, "plain text"]) == {
        "name": "B",
        "lat": 1.5,
        "line": "rated 4.5 of 5",
        "whole": "plain text",
    }


def test_a_path_into_a_failed_call_gives_nothing() -> None:
    # a failed call returns error text, so an answer built from it is wrong
    assert fill_answer("$result[0].places[0].name", ["Place search failed: ZERO_RESULTS"]) == ""
    assert fill_answer("$result[0].places[5].name", [PLACES]) == ""
    assert fill_answer("$result[3].places", [PLACES]) == ""


def test_the_drivers_needs_answer_keeps_only_what_is_missing() -> None:
    answer = {
        "servers": [
            {"server": "calculator", "why": "the agent's servers", "env": [], "command": "python3"},
            {"server": "google-maps", "why": "the agent's servers", "env": ["GOOGLE_MAPS_API_KEY"]},
            {
                "server": "github",
                "why": "the evaluator github.check",
                "command": "docker",
                "command_missing": True,
            },
            {"server": "nope", "why": "the agent's servers", "unknown": True},
        ],
        "env": ["GITHUB_PERSONAL_ACCOUNT_NAME"],
    }
    needs = parse_needs("repo/task_1", answer)
    assert [m.server for m in needs.missing] == ["google-maps", "github", "nope", ""]
    assert [m.describe() for m in needs.missing] == [
        "server google-maps (the agent's servers): set GOOGLE_MAPS_API_KEY",
        "server github (the evaluator github.check): command docker not found",
        "server nope (the agent's servers): no server named nope in MCP-Universe's server list",
        "the task: set GITHUB_PERSONAL_ACCOUNT_NAME",
    ]
    assert parse_needs("t", {"servers": answer["servers"][:1], "env": []}).missing == []


def test_the_error_groups_tasks_by_what_they_lack_and_names_everything() -> None:
    maps = {"server": "google-maps", "why": "the agent's servers", "env": ["GOOGLE_MAPS_API_KEY"]}
    needs = [parse_needs(f"location_navigation/t{i}", {"servers": [maps]}) for i in range(5)]
    needs.append(TaskNeeds("fine/task"))  # nothing missing: not named
    error = McpuServicesMissingError(needs)
    text = str(error)
    assert text.startswith("5 MCP-Universe task(s) need services that are not set up")
    assert text.count("GOOGLE_MAPS_API_KEY") == 1  # one line for the five tasks
    assert "[5 task(s): location_navigation/t0, location_navigation/t1 and 3 more]" in text
    assert "fine/task" not in text and SERVERS_ENV in text
    assert error.variables == ["GOOGLE_MAPS_API_KEY"] and error.servers == ["google-maps"]


def test_evaluator_needs_name_servers_of_mcp_universes_list_or_variables() -> None:
    for prefix, (servers, env) in EVALUATOR_NEEDS.items():
        assert servers or env, prefix
        assert all(v.isupper() for v in env)
    assert EVALUATOR_NEEDS["google_maps."] == (("google-maps",), ())


def test_the_driver_reads_the_same_server_list_variable() -> None:
    # the driver cannot import awm: it spells the name itself
    tree = ast.parse((TASKS_DIR.parent / "driver.py").read_text())
    values = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }
    assert values["SERVERS_ENV"] == SERVERS_ENV


def test_every_awm_mode_adaptation_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## MCP-Universe") :]
    section = section[: section.find("\n## ", 1)]
    for name in AWM_MODE_ADAPTATIONS:
        assert f"`{name}`" in section, name
