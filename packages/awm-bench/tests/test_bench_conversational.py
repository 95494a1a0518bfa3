"""``awm bench tasks --conversational``: only tasks with a user, pass rate and turns."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.models import ToolCall
from awm_core.toolcalls import HermesFormat
from awm_envs import load_environment


def _bench(*args: str) -> str:
    result = CliRunner().invoke(build_cli(), ["bench", "tasks", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_oracle_passes_every_conversational_task_and_turns_are_counted(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    shown = _bench("shop", "--conversational", "--out", str(out))
    conversational = [t for t in load_environment("shop").tasks if t.user is not None]
    summary = json.loads((out / "summary.json").read_text())
    talk = summary["conversational"]
    assert talk["episodes"] == len(conversational) and talk["pass_rate"] == 1.0
    # the reference says each of its reference messages to the user (the user stops last)
    said = [len(t.user.reference_messages) for t in conversational]  # type: ignore[union-attr]
    assert talk["mean_user_turns"] == sum(said) / len(said)
    turns = [
        1 + len(t.reference_solution or []) + n for t, n in zip(conversational, said, strict=True)
    ]
    assert talk["mean_turns"] == sum(turns) / len(turns)
    assert "conversational: 100% passed" in shown
    rows = [json.loads(line) for line in (out / "awm.jsonl").read_text().splitlines()]
    assert {r["task_id"] for r in rows} == {t.id for t in conversational}


def test_acting_before_asking_fails_the_conversational_benchmark(tmp_path: Path) -> None:
    fmt = HermesFormat()
    call = ToolCall(
        name="call_tool",
        arguments={"tool_name": "cancel_order", "arguments": {"order_id": 16}},
    )
    script = tmp_path / "hasty.json"
    script.write_text(
        json.dumps(
            [
                fmt.assistant_response(ToolCall(name="list_tools"), reasoning="list").content,
                fmt.assistant_response(None, reasoning="ask", content="Which order?"),
                fmt.assistant_response(call, reasoning="cancel").content,
                "Order 16 is cancelled.",
                "Anything else?",
            ],
            default=lambda r: r.content,
        )
    )
    out = tmp_path / "hasty"
    _bench(
        "shop", "--conversational", "--task", "conv_cancel_order",
        "--model", f"scripted:{script}", "--out", str(out),
    )  # fmt: skip
    talk = json.loads((out / "summary.json").read_text())["conversational"]
    assert talk["episodes"] == 1 and talk["pass_rate"] == 0.0
    trajectory = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    evidence = trajectory["metadata"]["verdict"]["verification"]["evidence"]
    assert evidence["order_cancelled"] is True
    assert evidence["communication"]["unconfirmed"]
