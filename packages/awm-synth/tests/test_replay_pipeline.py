"""``awm synth all --backend replay``: offline, deterministic, every self-correction path taken."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_synth.pipeline import RunSummary
from awm_synth.reporting.report import build_report
from awm_synth.store.checkpoint import RunDir


def test_ships_at_least_three_environments(replay_run: tuple[Path, RunSummary]) -> None:
    out, summary = replay_run
    assert len(summary.shipped) >= 3
    for status in summary.shipped:
        assert status.bundle is not None
        bundle = out / status.bundle
        assert {p.name for p in bundle.iterdir()} >= {
            "manifest.json",
            "schema.sql",
            "seed.sql",
            "app.py",
            "tasks.json",
            "verifiers.py",
        }


def test_bundles_load_and_validate_in_the_runtime(replay_run: tuple[Path, RunSummary]) -> None:
    from awm_envs import load_environment, validate_environment

    out, summary = replay_run
    for status in summary.shipped:
        assert status.bundle is not None
        env = load_environment(out / status.bundle)
        with env.instance() as inst:
            assert len(inst.list_tools_sync()) == status.tools
            now = inst.call_tool_sync("get_current_time", {})
            assert not now.is_error and "2025-03-15T09:00:00" in str(now.content)
        result = validate_environment(out / status.bundle)
        assert result.passed, result.problems + [p for t in result.tasks for p in t.problems]
        assert len(result.tasks) == status.tasks == 5


def test_seed_data_never_reads_the_clock(replay_run: tuple[Path, RunSummary]) -> None:
    out, _ = replay_run
    seed = (out / "bundles" / "clinic_appointments" / "seed.sql").read_text()
    assert (
        "'now'" not in seed.lower() and "2025-03-01 09:00:00" in seed
    )  # datetime('now', '-14 days')


def test_report_shows_every_correction_path(replay_run: tuple[Path, RunSummary]) -> None:
    out, _ = replay_run
    report = build_report(RunDir(out))
    causes = {c for stage in report["stages"].values() for c in stage["failures_by_cause"]}
    assert {
        "ddl_error",
        "insert_error",
        "fk_violation",
        "import_error",
        "startup_error",
        "tool_500",
        "verifier_initial_complete",
    } <= causes
    paths = {(c["scenario"], c["stage"]): c for c in report["self_corrections"]}
    assert (
        paths[("online_bookstore", "data")]["attempts"][0]["failed"] == 1
    )  # tolerated, not retried
    assert len(paths[("online_bookstore", "data")]["attempts"]) == 1
    assert paths[("project_tracker", "verifiers")]["kept_attempt"] == 2
    sc = report["scenario_stage"]
    assert sc["rejected_unsuitable"] == ["weather_dashboard"]
    assert [d["name"] for d in sc["duplicates"]] == ["online_bookshop"]
    assert report["totals"]["prompt_tokens"] > 0
    assert report["diversity"]["functions"] > 0


def test_rerun_is_free_and_identical(
    replay_run: tuple[Path, RunSummary], replay: Callable[[Path], RunSummary], tmp_path: Path
) -> None:
    run_replay = replay
    out, _ = replay_run
    again = run_replay(tmp_path / "again")
    for status in again.shipped:
        assert status.bundle is not None
        for f in (tmp_path / "again" / status.bundle).iterdir():
            assert f.read_bytes() == (out / status.bundle / f.name).read_bytes(), f.name
    resumed = run_replay(out)  # same folder: everything is checkpointed
    assert resumed.requests_sent == 0


def test_cli_report_json_and_dry_run(replay_run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    out, _ = replay_run
    runner = CliRunner()
    cli = build_cli()
    result = runner.invoke(cli, ["synth", "report", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["environments_shipped"] >= 3
    result = runner.invoke(
        cli,
        ["synth", "all", "--out", str(tmp_path / "dry"), "--count", "20", "--dry-run", "--json"],
    )
    assert result.exit_code == 0, result.output
    estimate = json.loads(result.output)
    assert estimate["scenarios"] == 20 and estimate["requests"] > 6 * 20
    assert not (tmp_path / "dry").exists()  # a dry run writes nothing


def test_a_single_stage_needs_its_inputs(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_cli(), ["synth", "schema", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "awm synth scenario" in str(result.exception) or "awm synth scenario" in result.output
