"""``awm verify``: diff, run (replaying a trajectory on the shop catalog environment), reliability."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from awm_core.models import Message, StepRecord, ToolCall, ToolResult, Trajectory
from awm_verify import plugin
from awm_verify.cli import verify_group


def reference_trajectory(
    task_id: str, *, final_answer: str | None = None, drop_last: bool = False
) -> Trajectory:
    """A trajectory that makes the shop task's reference calls (through call_tool)."""
    from awm_envs import load_environment

    env = load_environment("shop")
    task = next(t for t in env.tasks if t.id == task_id)
    calls = list(task.reference_solution or [])
    if drop_last:
        calls = calls[:-1]
    steps = [
        StepRecord(
            index=0,
            assistant=Message(role="assistant"),
            tool_call=ToolCall(id="c0", name="list_tools"),
            result=ToolResult(content="..."),
        )
    ]
    for i, call in enumerate(calls, 1):
        steps.append(
            StepRecord(
                index=i,
                assistant=Message(role="assistant"),
                tool_call=ToolCall(
                    id=f"c{i}",
                    name="call_tool",
                    arguments={"tool_name": call.tool, "arguments": json.dumps(call.arguments)},
                ),
                result=ToolResult(content={"ok": True}),
            )
        )
    answer = final_answer if final_answer is not None else (task.reference_answer or "Done.")
    return Trajectory(
        env_id="shop",
        task_id=task_id,
        instruction=task.instruction,
        steps=steps,
        final_answer=answer,
    )


def write(tmp_path: Path, name: str, *trajs: Trajectory) -> Path:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("\n".join(t.model_dump_json() for t in trajs))
    else:
        path.write_text(trajs[0].model_dump_json())
    return path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(verify_group, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_the_plugin_adds_the_verify_group():
    root = click.Group("awm")
    plugin.register_commands(cli=root)
    assert set(root.commands["verify"].commands) == {"diff", "run", "reliability"}  # type: ignore[attr-defined]


def test_diff_command_text_and_json(tmp_path: Path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for path, extra in ((a, ""), (b, "UPDATE t SET v = 'new' WHERE id = 1;")):
        conn = sqlite3.connect(path)
        conn.executescript(
            f"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'old');{extra}"
        )
        conn.close()
    code, out = invoke("diff", str(a), str(b))
    assert code == 0 and '~ id=1: v: "old" -> "new"' in out
    code, out = invoke("diff", str(a), str(b), "--json")
    data = json.loads(out)
    assert data["counts"]["updated"] == 1 and data["tables"][0]["updated"][0]["key"] == {"id": 1}


def test_run_replays_a_read_only_trajectory_and_completes_it(tmp_path: Path):
    path = write(tmp_path, "t.json", reference_trajectory("aeropress_stock"))
    code, out = invoke(
        "run", "--env", "shop", "--task", "aeropress_stock", str(path), "--judge", "code", "--json"
    )
    data = json.loads(out)
    assert code == 0
    assert data["verdict"]["label"] == "Completed" and data["reward"]["value"] == 1.0
    assert data["replay"] == {"replayed": 1, "skipped_failed": 0, "divergences": []}


def test_run_replays_writes_so_the_verifier_sees_them(tmp_path: Path):
    path = write(tmp_path, "t.json", reference_trajectory("cancel_latest_unshipped"))
    code, out = invoke(
        "run",
        "--env",
        "shop",
        "--task",
        "cancel_latest_unshipped",
        str(path),
        "--judge",
        "code",
        "--json",
    )
    data = json.loads(out)
    assert data["verdict"]["label"] == "Completed", data
    assert data["diff_counts"]["updated"] >= 1


def test_run_rejects_an_incomplete_trajectory(tmp_path: Path):
    path = write(
        tmp_path, "t.json", reference_trajectory("cancel_latest_unshipped", drop_last=True)
    )
    code, out = invoke("run", "--env", "shop", str(path), "--judge", "code")
    assert code == 0
    assert "verdict: Agent Error (code)" in out and "reward:  0" in out


def test_run_with_the_code_augmented_judge_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_server
):
    monkeypatch.setenv("AWM_OPENAI_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("AWM_OPENAI_API_KEY", "test")
    path = write(tmp_path, "t.json", reference_trajectory("aeropress_stock"))
    before = judge_server.request_count
    code, out = invoke("run", "--env", "shop", str(path), "--model", "openai:judge", "--json")
    data = json.loads(out)
    assert data["verdict"]["judge"] == "code+llm" and data["verdict"]["label"] == "Completed"
    assert judge_server.request_count == before + 1


def test_reliability_command_reports_the_metrics(tmp_path: Path):
    path = write(
        tmp_path,
        "many.jsonl",
        reference_trajectory("aeropress_stock"),
        reference_trajectory("aeropress_stock", final_answer="There are 3 in stock."),
    )
    code, out = invoke("reliability", str(path), "--judge", "code", "--trials", "3", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["n_items"] == 2 and data["n_trials"] == 3
    assert data["self_consistency"] == 1.0 and data["reward_flip_rate"] == 0.0
    assert data["labels"] == [["Completed"] * 3, ["Agent Error"] * 3]


def test_unknown_task_is_a_clear_error(tmp_path: Path):
    from awm_core.errors import AWMError

    path = write(tmp_path, "t.json", reference_trajectory("aeropress_stock"))
    with pytest.raises(AWMError, match="has no task 'nope'"):
        invoke("run", "--env", "shop", "--task", "nope", str(path), "--judge", "code")
