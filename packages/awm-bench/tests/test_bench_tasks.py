"""``awm bench tasks``: Pass@1 by complexity bucket through the trainer's path."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from awm_bench.report_html import bar_chart, latency_histogram
from awm_core.cli import build_cli


def _bank_tasks() -> int:
    from awm_envs import load_environment

    return len(load_environment("bank").tasks)


def test_reference_policy_scores_every_bucket_fully(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "tasks", "bank", "--json", "--out", str(tmp_path)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["env_id"] == "bank" and report["pass_rate"] == 1.0
    buckets = report["pass_rate_by_complexity"]
    assert set(buckets) == {"easy", "medium", "hard", "very_hard"}
    assert all(b["passed"] == b["total"] for b in buckets.values())
    assert report["reward_distribution"] == {"+1.0": _bank_tasks()}


def test_a_model_that_never_calls_a_tool_fails_every_task(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["I cannot help with that."] * _bank_tasks()))
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "tasks", "bank", "--model", f"scripted:{script}", "--json"]
        + ["--out", str(tmp_path / "run")],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)
    assert report["pass_rate"] == 0.0
    # answering before list_tools is a format violation: -1.0 each (the paper's reward)
    assert report["reward_distribution"] == {"-1.0": _bank_tasks()}


def test_latency_histogram_bins_are_log_spaced_and_count_everything() -> None:
    edges, counts = latency_histogram([0.0001, 0.0002, 0.001, 0.01, 0.01])
    assert sum(counts) == 5
    assert edges[0].endswith("µs") and edges[-1].endswith("ms")


def test_bar_chart_leaves_gaps_for_empty_buckets() -> None:
    svg = bar_chart("t", ["a", "b"], {"s": [1.0, None]}, y_max=1.0)
    assert svg.count("<rect") == 2  # one bar + one legend swatch


def test_chart_axes_have_round_ticks() -> None:
    from awm_bench.report_html import nice_ticks

    assert nice_ticks(0, 5) == [0, 1, 2, 3, 4, 5]  # quality scores, not 1.2, 2.5, 3.8
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 137) == [0, 50, 100, 150]
    svg = bar_chart("t", ["a"], {"s": [3.0]}, y_max=5.0)
    assert ">2.5<" not in svg and ">1.2<" not in svg and ">4<" in svg


def test_a_report_without_tool_calls_has_no_latency_section(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["I cannot help with that."] * 2))
    out = tmp_path / "run"
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "tasks", "bank", "--limit", "2", "--model", f"scripted:{script}"]
        + ["--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    assert "Per-task outcomes" in page and "Tool-call latency" not in page
