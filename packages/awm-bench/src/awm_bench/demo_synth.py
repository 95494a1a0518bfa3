"""The demo's synthesis step: one environment through the whole awm-synth pipeline."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from awm_synth.config import SynthConfig
from awm_synth.pipeline import load_scenarios, make_llm, prepare_run, run_pipeline
from awm_synth.reporting.report import build_report
from awm_synth.store.checkpoint import RunDir

PREFERRED = (
    "online_bookstore"  # its recorded run corrects a DDL error, a bad insert and an import error
)


def synthesize_one(run_root: Path, backend: str) -> tuple[Path | None, dict[str, Any]]:
    """Scenario stage, then every environment stage for the first scenario.

    Returns the shipped bundle (or ``None``) and a summary with the self-corrections
    the run needed, read back from the run's own records (``awm synth report``).
    """
    run_dir = RunDir(run_root)
    config = prepare_run(run_dir, SynthConfig(backend=backend, count=3, tasks_per_scenario=5))
    llm = make_llm(config, run_dir)
    asyncio.run(run_pipeline(run_dir, llm, config, stages=()))
    scenarios = load_scenarios(run_dir)
    chosen = next(
        (s for s in scenarios if s.name == PREFERRED), scenarios[0] if scenarios else None
    )
    if chosen is None:
        return None, {"run_dir": str(run_root), "error": "the scenario stage kept no scenario"}
    summary = asyncio.run(
        run_pipeline(run_dir, llm, config, scenarios=[chosen], with_scenario_stage=False)
    )
    report = build_report(run_dir)
    corrections = []
    for row in report.get("self_corrections", []):
        if row["scenario"] != chosen.name:
            continue
        causes = sorted({c for a in row["attempts"] for c in a["causes"]})
        first = row["attempts"][0]
        if len(row["attempts"]) == 1:
            detail = f"{first['failed']}/{first['total']} failing ({', '.join(causes)}), within tolerance: kept"
        else:
            detail = (
                f"attempt 1: {first['failed']}/{first['total']} failing ({', '.join(causes)}); "
                f"errors fed back; kept attempt {row['kept_attempt']}"
            )
        corrections.append(
            {
                "env": row["scenario"],
                "stage": row["stage"],
                "attempts": len(row["attempts"]),
                "detail": detail,
            }
        )
    status = next((s for s in summary.statuses if s.scenario == chosen.name), None)
    bundle = run_dir.bundles_dir / chosen.name
    shipped = status is not None and status.status == "shipped" and bundle.is_dir()
    return (bundle if shipped else None), {
        "run_dir": str(run_root),
        "backend": backend,
        "scenario": chosen.name,
        "status": status.status if status else "missing",
        "requests_sent": llm.requests_sent,
        "corrections": corrections,
        "stages": report.get("stages", {}),
    }
