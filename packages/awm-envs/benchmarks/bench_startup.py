"""How long awm takes to start: ``awm --help``, read-only commands, and MCP serving.

    python packages/awm-envs/benchmarks/bench_startup.py [--runs 5] [--json]

Each figure is the median wall time of ``--runs`` fresh processes, measured
from spawning ``awm`` to its answer: the end of ``awm --help`` / ``envs
list`` / ``envs show``, and for ``awm envs serve shop --stdio`` the
``initialize`` response and the first ``tools/call`` response (the one that
waits for ``app.py`` to load). Targets (issue 13): ``--help`` <= 0.5 s,
``initialize`` <= 1.5 s on the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"awm --help": 0.5, "serve: initialize": 1.5}


def _awm() -> list[str]:
    exe = Path(sys.executable).with_name("awm")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("awm")
    return [found] if found else [sys.executable, "-m", "awm_core.cli"]


def time_command(args: list[str]) -> float:
    """Seconds until ``awm ARGS`` exits (its output is discarded)."""
    started = time.perf_counter()
    subprocess.run(
        [*_awm(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )
    return time.perf_counter() - started


def _send(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def _reply(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server exited before answering")
        data: dict[str, object] = json.loads(line)
        if data.get("id") == request_id:
            return data


def time_serve(env: str = "shop") -> tuple[float, float]:
    """Seconds until ``awm envs serve ENV --stdio`` answers ``initialize``, then a ``tools/call``."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*_awm(), "envs", "serve", env, "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "bench_startup", "version": "0"},
                },
            },
        )
        reply = _reply(proc, 1)
        initialized = time.perf_counter() - started
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "get_current_time", "arguments": {}},
            },
        )
        _reply(proc, 2)
        return initialized, time.perf_counter() - started
    finally:
        proc.kill()
        proc.wait()


def measure(runs: int) -> dict[str, float]:
    """Median seconds per figure over ``runs`` fresh processes each."""
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        samples.setdefault("awm --help", []).append(time_command(["--help"]))
        samples.setdefault("awm envs list", []).append(time_command(["envs", "list"]))
        samples.setdefault("awm envs show shop", []).append(time_command(["envs", "show", "shop"]))
        init, call = time_serve()
        samples.setdefault("serve: initialize", []).append(init)
        samples.setdefault("serve: first tools/call", []).append(call)
    return {name: round(statistics.median(values), 3) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = measure(args.runs)
    if args.json:
        print(json.dumps({"runs": args.runs, "cpus": os.cpu_count(), "seconds": figures}, indent=2))
        return
    for name, seconds in figures.items():
        target = TARGETS.get(name)
        mark = (
            ""
            if target is None
            else f"  (target <= {target} s: {'ok' if seconds <= target else 'MISSED'})"
        )
        print(f"{name:<26} {seconds:6.3f} s{mark}")


if __name__ == "__main__":
    main()
