"""`awm run` end to end through click's CliRunner (the installed entry point's code path)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.models import Termination, Trajectory


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    # stdout only: a warning on stderr must not break the JSON a pipeline would read
    return result.exit_code, result.stdout


def test_run_reference_json_is_a_trajectory() -> None:
    code, out = invoke("run", "--reference", "--task", "create_todo", "--json")
    assert code == 0, out
    traj = Trajectory.model_validate_json(out)
    assert traj.termination is Termination.FINAL_ANSWER
    assert traj.env_id == "fake_notes" and traj.task_id == "create_todo"
    assert [s.tool_call.name for s in traj.steps[:2]] == ["list_tools", "call_tool"]


def test_run_with_a_scripted_model_file(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(
        json.dumps(
            [
                '<tool_call>{"name": "list_tools", "arguments": {}}</tool_call>',
                '<tool_call>{"name": "call_tool", "arguments": '
                '{"tool_name": "get_note", "arguments": {"note_id": 1}}}</tool_call>',
                "milk, eggs, bread",
            ]
        )
    )
    code, out = invoke("run", "--model", f"scripted:{script}", "--json", "--history-window", "-1")
    assert code == 0, out
    data = json.loads(out)
    assert data["final_answer"] == "milk, eggs, bread"
    assert data["metadata"]["history_window"] is None


def test_run_prints_a_readable_summary() -> None:
    code, out = invoke("run", "--reference", "--task", "read_groceries")
    assert code == 0, out
    assert "final_answer" in out and "milk, eggs, bread" in out
    assert "get_note" in out


def test_run_reports_a_format_error_without_crashing(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["the answer is milk"]))
    code, out = invoke("run", "--model", f"scripted:{script}", "--json")
    assert code == 0
    assert json.loads(out)["termination"] == "format_error"


def test_unknown_environment_lists_the_known_ones() -> None:
    result = CliRunner().invoke(build_cli(), ["run", "--env", "nope", "--reference"])
    assert result.exit_code != 0
    assert "fake_notes" in str(result.exception)


def test_serve_llm_is_registered() -> None:
    code, out = invoke("serve-llm", "--help")
    assert code == 0 and "--port" in out and "local:smollm2" in out
