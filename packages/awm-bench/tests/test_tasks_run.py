"""One way to benchmark awm's tasks: ``awm bench tasks`` and ``awm bench run tasks`` share
one engine and one layout, keep every episode as it ends, resume, and stop cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Trajectory
from awm_core.testing import sigint_as_default, wait_until


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _tasks(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(build_cli(), ["bench", "tasks", *args])
    return result.exit_code, result.stdout, result.stderr


def test_every_episode_is_kept_with_its_verdict_in_the_layout_awm_view_opens(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    code, stdout, _ = _tasks("shop", "bank", "--limit", "2", "--out", str(out))
    assert code == 0, stdout
    rows = _rows(out / "awm.jsonl")
    trajectories = [Trajectory.model_validate(r) for r in _rows(out / "trajectories.jsonl")]
    assert len(rows) == len(trajectories) == 4
    assert {r["key"] for r in rows} == {t.metadata["run_key"] for t in trajectories}
    for traj in trajectories:
        verdict = traj.metadata["verdict"]
        assert verdict["label"] == "Completed" and verdict["reward"] == 1.0
        assert verdict["diff"] is not None  # the database diff is kept for the viewer
    summary = json.loads((out / "summary.json").read_text())
    assert summary["benchmark"] == "tasks" and summary["model"] == "oracle"
    assert summary["modes"]["awm"]["headline"] == 1.0 and summary["modes"]["awm"]["complete"]
    assert (out / "report.html").is_file()
    assert f"awm view {out}" in stdout
    viewed = CliRunner().invoke(build_cli(), ["view", str(out)])
    assert viewed.exit_code == 0 and "shop" in viewed.stdout and "bank" in viewed.stdout


def test_bench_run_tasks_writes_the_same_layout(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "run", "tasks", "--only", "bank", "--limit", "1"]
        + ["--run", "r", "--results", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    out = tmp_path / "r" / "tasks" / "oracle"
    assert len(_rows(out / "awm.jsonl")) == len(_rows(out / "trajectories.jsonl")) == 1
    code, _, _ = _tasks("bank", "--limit", "1", "--out", str(out))  # the same run, resumed
    assert code == 0 and len(_rows(out / "trajectories.jsonl")) == 1


def test_a_killed_run_resumes_with_only_the_missing_episodes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _tasks("bank", "--limit", "3", "--out", str(out))[0] == 0
    rows = _rows(out / "awm.jsonl")
    # as a kill leaves it: the last trajectory kept, its journal row never written
    (out / "awm.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]))
    before = {r["key"]: r for r in rows[:-1]}
    assert _tasks("bank", "--limit", "3", "--out", str(out))[0] == 0
    after = _rows(out / "awm.jsonl")
    keys = [t["metadata"]["run_key"] for t in _rows(out / "trajectories.jsonl")]
    assert sorted(keys) == sorted(r["key"] for r in after) and len(set(keys)) == 3
    assert [r for r in after if r["key"] in before] == list(before.values())  # kept, not rerun


def test_trials_give_pass_hat_k(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, stdout, _ = _tasks("bank", "--limit", "2", "--trials", "2", "--out", str(out))
    assert code == 0 and "pass^2: 100%" in stdout
    rows = _rows(out / "awm.jsonl")
    assert sorted(r["key"].rsplit("#", 1)[1] for r in rows) == ["0", "0", "1", "1"]
    # one trial of one task fails: that task's pass^1 is 1/2, its pass^2 is 0
    rows[-1]["label"] = "Agent Error"
    (out / "awm.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _tasks("bank", "--limit", "2", "--trials", "2", "--out", str(out))[0] == 0
    pass_hat = json.loads((out / "summary.json").read_text())["modes"]["awm"]["pass_hat_k"]
    assert pass_hat == {"pass^1": 0.75, "pass^2": 0.5}


def test_tasks_are_chosen_by_id_and_an_unknown_one_is_named(tmp_path: Path) -> None:
    from awm_envs import load_environment

    first, second = (t.id for t in load_environment("bank").tasks[:2])
    out = tmp_path / "run"
    code, _, _ = _tasks("bank", "--task", second, "--out", str(out))
    assert code == 0 and [r["task_id"] for r in _rows(out / "awm.jsonl")] == [second]
    code, _, stderr = _tasks("bank", "--task", "nope", "--out", str(tmp_path / "x"))
    assert code == 2 and "nope" in stderr and first in stderr
    code, _, stderr = _tasks("bank", "shop", "--task", second, "--out", str(tmp_path / "y"))
    assert code == 2 and "ENV/TASK" in stderr


def test_the_old_name_of_the_ground_truth_still_runs_as_oracle(tmp_path: Path) -> None:
    code, _, stderr = _tasks("bank", "--model", "reference", "--limit", "1", "--json")
    assert code == 0 and "'oracle'" in stderr


def test_ctrl_c_stops_without_a_hang_keeps_the_work_and_resumes(tmp_path: Path) -> None:
    """SIGINT to the real command: no traceback, exit 130, every finished episode kept, and
    the same command finishes the rest without asking the model again for the kept ones."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "awm_core.cli", "bench", "tasks", "bank", "--out", str(out)]
    cmd += ["--model", "openai:scripted", "--judge", "code", "--concurrency", "1", "--limit", "10"]
    # each answer takes a while, so the run is mid-way when Ctrl-C comes
    with ScriptedOpenAIServer(lambda body: "I cannot help with that.", latency_s=0.4) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=sigint_as_default,
        )
        journal = out / "awm.jsonl"
        wait_until(
            lambda: journal.exists() and len(_rows(journal)) >= 2,
            timeout=120,
            what="two finished episodes",
        )
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        stdout, stderr = proc.communicate(timeout=30)
        stopped_s = time.monotonic() - sent
        assert proc.returncode == 130, stderr
        assert stopped_s < 8.0, (
            f"took {stopped_s:.1f} s to stop"
        )  # a hang (12.6 s before the fix), not a timing claim: a loaded 2-core CI machine takes ~2.5 s
        assert "Traceback" not in stderr and "interrupted" in stderr
        kept = _rows(journal)
        assert 2 <= len(kept) < 10
        assert len(_rows(out / "trajectories.jsonl")) == len(kept)
        asked = len(server.requests)

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(_rows(journal)) == 10 == len(_rows(out / "trajectories.jsonl"))
        # the kept episodes were not asked again (one reply per episode; at most the
        # interrupted one is asked twice)
        assert len(server.requests) - asked <= 10 - len(kept) + 1


def test_the_summary_table_fits_80_columns_without_cutting_ids(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    cmd = [sys.executable, "-m", "awm_core.cli", "bench", "tasks", "shop", "bank"]
    done = subprocess.run(
        [*cmd, "--limit", "1", "--out", str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table)  # paths below may be longer
    assert "environment" in done.stdout and "shop" in done.stdout and "…" not in done.stdout
