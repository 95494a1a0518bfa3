"""``awm bench run all``: every installed benchmark into one run, one report, resumable.

A second benchmark plugin is registered for the test (counting its runs) next to the
real ones: awm's own tasks run for real; BFCLv3, τ² and MCP-Universe run where their
packages are installed and are named with their install line where not (this venv
decides which, and the test checks whichever it is).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.contracts import BenchmarkConfig
from awm_core.hookspecs import Register, hookimpl
from awm_core.registry import BENCHMARKS, collect


class _Counted:
    """A benchmark that records each config it was run with and writes a real summary."""

    name = "counted"
    title = "counted (test)"
    modes = ("awm",)

    def __init__(self) -> None:
        self.configs: list[BenchmarkConfig] = []

    def available(self) -> str | None:
        return None

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        return []

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        self.configs.append(config)
        config.out.mkdir(parents=True, exist_ok=True)
        return {
            "benchmark": self.name,
            "model": config.model,
            "modes": {"awm": {"cases": 2, "headline": 0.5}},
        }


class _Plugin:
    def __init__(self, bench: _Counted) -> None:
        self.bench = bench

    @hookimpl
    def register_benchmarks(self, register: Register) -> None:
        register("counted", self.bench)


def test_all_runs_every_installed_benchmark_into_one_report(
    tmp_path: Path, register_plugin: Any
) -> None:
    bench = _Counted()
    register_plugin(_Plugin(bench))
    suites = collect(BENCHMARKS)
    missing = {n for n, s in suites.items() if s.available() is not None}
    ready = set(suites) - missing
    assert {"tasks", "counted"} <= ready
    args = ["bench", "run", "all", "--run", "r", "--results", str(tmp_path), "--limit", "1"]
    args += ["--only", "shop", "--max-steps", "6"] if ready == {"tasks", "counted"} else []
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == (1 if missing else 0), result.output
    for name in missing:  # named, with what to install, and the others still ran
        assert f"{name}: " in result.output and "install" in result.output
    run = tmp_path / "r"
    assert {p.parent.parent.name for p in run.glob("*/*/summary.json")} == ready
    assert (run / "report.html").is_file()
    # the benchmark's own step limit unless --max-steps says otherwise
    assert bench.configs[0].max_steps == (6 if "--max-steps" in args else None)

    listed = CliRunner().invoke(build_cli(), ["bench", "report", str(run), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["results"]
    assert {r["benchmark"] for r in rows} == ready
    counted = next(r for r in rows if r["benchmark"] == "counted")
    assert counted == {
        "benchmark": "counted",
        "model": "oracle",
        "corruption": None,
        "mode": "awm",
        "headline": 0.5,
        "cases": 2,
        "complete": True,
    }
    tasks = next(r for r in rows if r["benchmark"] == "tasks")
    assert tasks["model"] == "oracle" and tasks["headline"] == 1.0  # references complete

    # the same --run again continues the run in the same folders
    again = CliRunner().invoke(build_cli(), args)
    assert again.exit_code == result.exit_code
    assert [c.out for c in bench.configs] == [run / "counted" / "oracle"] * 2
