"""Run reports and ``awm bench compare`` from benchmark summaries (no benchmark package needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_bench.compare import compare_runs
from awm_bench.report import build_report
from awm_core.cli import build_cli


def _bfcl_summary(run: Path, model: str, overall: float, simple: float) -> None:
    folder = run / "bfcl" / model.replace(":", "-")
    folder.mkdir(parents=True)
    summary = {
        "benchmark": "bfcl",
        "model": model,
        "subset": "2 per category",
        "modes": {
            "awm": {
                "cases": 34,
                "groups": {"overall": overall, "non_live": 0.5, "live": 0.5, "multi_turn": 0.1},
                "categories": {"simple": {"correct": 1, "total": 2, "accuracy": simple}},
            }
        },
    }
    (folder / "summary.json").write_text(json.dumps(summary))


def test_the_report_has_the_papers_reference_rows_and_every_model(tmp_path: Path) -> None:
    run = tmp_path / "base"
    _bfcl_summary(run, "oracle", 1.0, 1.0)
    _bfcl_summary(run, "openai:qwen3-8b", 0.5383, 0.5)
    report = build_report(run)
    assert [s["model"] for s in report["benchmarks"]["bfcl"]] == ["oracle", "openai:qwen3-8b"]
    page = (run / "report.html").read_text()
    assert "Qwen3-8B (paper)" in page and "53.83" in page and "65.94" in page


def test_compare_lines_up_the_models_of_two_runs_with_deltas(tmp_path: Path) -> None:
    _bfcl_summary(tmp_path / "base", "openai:base", 0.50, 0.25)
    _bfcl_summary(tmp_path / "base", "oracle", 1.0, 1.0)  # a run's oracle is not its model
    _bfcl_summary(tmp_path / "trained", "openai:trained", 0.60, 0.75)
    result = compare_runs([tmp_path / "base", tmp_path / "trained"])
    bfcl = result["benchmarks"]["bfcl"]
    assert bfcl["models"] == ["openai:base", "openai:trained"]
    assert round(bfcl["modes"]["awm"]["overall"]["delta"], 6) == 0.1
    assert bfcl["modes"]["awm"]["simple"]["delta"] == 0.5


def test_awm_bench_compare_prints_the_deltas(tmp_path: Path) -> None:
    _bfcl_summary(tmp_path / "a", "openai:base", 0.50, 0.25)
    _bfcl_summary(tmp_path / "b", "openai:trained", 0.60, 0.75)
    result = CliRunner().invoke(
        build_cli(), ["bench", "compare", str(tmp_path / "a"), str(tmp_path / "b")]
    )
    assert result.exit_code == 0, result.output
    assert "bfcl [awm]" in result.output and "+10.00" in result.output


def test_a_missing_benchmark_package_is_reported_with_its_install_line(tmp_path: Path) -> None:
    from awm_core.registry import get_benchmark

    if get_benchmark("bfcl").available() is None:
        pytest.skip("bfcl-eval is installed in this venv (its nox session): nothing is missing")
    args = ["bench", "run", "bfcl", "--results", str(tmp_path), "--run", "r"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 1
    assert "awm-bench[bfcl]" in result.output
