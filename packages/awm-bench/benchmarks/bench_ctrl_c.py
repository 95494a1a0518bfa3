"""How long after Ctrl-C do awm's long commands exit, with their work kept? A benchmark.

The tests check that SIGINT ends each command with exit 130, no traceback and the
finished work on disk, and that nothing hangs (a bound far above the goal, so a
loaded CI machine does not fail them). This script measures the figure the goal
names (under 2 s): it starts each real command, waits until it has kept some
work, sends SIGINT and prints the seconds until the process is gone::

    python packages/awm-bench/benchmarks/bench_ctrl_c.py            # 3 runs each
    python packages/awm-bench/benchmarks/bench_ctrl_c.py --runs 5 --json

Commands: ``awm bench tasks`` (a scripted model behind a local OpenAI-protocol
server, 0.4 s per answer), ``awm run`` (the same server) and ``awm demo``
(offline, interrupted after its synthesis step).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from awm_core.llm.scripted_server import ScriptedOpenAIServer


def _lines(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


def _json_key(path: Path, key: str) -> bool:
    try:
        return bool(json.loads(path.read_text(encoding="utf-8")).get(key))
    except (OSError, ValueError):
        return False


def _interrupt(cmd: list[str], env: dict[str, str], ready: Callable[[], bool]) -> float:
    """Seconds from SIGINT to exit, once ``ready()`` says work has been kept."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # SIGINT acts by default in the child even when this script was started in the
        # background (a shell's `&` starts it ignored, and the child would inherit that)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 600
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{cmd[3:5]} ended or stalled before keeping work")
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    proc.wait(timeout=120)
    took = time.monotonic() - sent
    if proc.returncode != 130:
        raise RuntimeError(f"{cmd[3:5]} exited {proc.returncode}, not 130")
    return took


def _bench_tasks(tmp: Path, env: dict[str, str]) -> float:
    out = tmp / "tasks"
    cmd = [sys.executable, "-m", "awm_core.cli", "bench", "tasks", "shop", "--out", str(out)]
    cmd += ["--model", "openai:scripted", "--judge", "code", "--concurrency", "1"]
    return _interrupt(cmd, env, lambda: _lines(out / "awm.jsonl") >= 2)


def _run(tmp: Path, env: dict[str, str]) -> float:
    out = tmp / "run.json"
    cmd = [sys.executable, "-m", "awm_core.cli", "run", "--env", "shop", "--out", str(out)]
    cmd += ["--model", "openai:scripted", "--max-steps", "40"]

    def steps() -> bool:
        try:
            return len(json.loads(out.read_text(encoding="utf-8"))["steps"]) >= 2
        except (OSError, ValueError, KeyError):
            return False

    return _interrupt(cmd, env, steps)


def _demo(tmp: Path, env: dict[str, str]) -> float:
    out = tmp / "demo"
    cmd = [sys.executable, "-m", "awm_core.cli", "demo", "--out", str(out)]
    offline = {**env, "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    return _interrupt(cmd, offline, lambda: _json_key(out / "summary.json", "synthesis"))


def _search_forever(body: dict[str, Any]) -> str:
    """A model that lists the tools once, then searches until stopped: always mid-episode."""
    if len(body["messages"]) <= 2:
        return '<tool_call>{"name": "list_tools", "arguments": {}}</tool_call>'
    return (
        '<tool_call>{"name": "call_tool", "arguments": {"tool_name": "search_products", '
        '"arguments": {"query": "Aeropress"}}}</tool_call>'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="interruptions per command")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # a client gone at Ctrl-C
    figures: dict[str, list[float]] = {"bench tasks": [], "run": [], "demo": []}
    with ScriptedOpenAIServer(_search_forever, latency_s=0.4) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "x"}
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                env["AWM_RUNS"] = str(root / "runs")
                figures["bench tasks"].append(_bench_tasks(root, env))
                figures["run"].append(_run(root, env))
                figures["demo"].append(_demo(root, env))
    summary = {
        name: {
            "median_s": round(statistics.median(v), 2),
            "max_s": round(max(v), 2),
            "runs": len(v),
        }
        for name, v in figures.items()
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{'command':<14} {'median s':>9} {'max s':>7}  (SIGINT to exit, goal < 2 s)")
    for name, row in summary.items():
        print(f"awm {name:<10} {row['median_s']:>9.2f} {row['max_s']:>7.2f}")


if __name__ == "__main__":
    main()
