"""``awm bench compare RUN...``: base vs. trained checkpoints, side by side, with deltas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from awm_bench.bfcl.cases import CATEGORIES
from awm_bench.report import BFCL_GROUP_COLUMNS, load_run


def _scores(summary: dict[str, Any], mode: str) -> dict[str, float]:
    data = summary.get("modes", {}).get(mode, {})
    out = {g: float(v) for g, v in data.get("groups", {}).items()}
    for cat, s in data.get("categories", {}).items():
        out[cat] = float(s["accuracy"])
    for key, value in data.get("table", {}).items():  # other benchmarks: flat score tables
        if isinstance(value, int | float):
            out[key] = float(value)
    return out


def primary(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The result a run stands for: its (first) real model, else its oracle."""
    real = [s for s in summaries if s.get("model") != "oracle" and not s.get("corruption")]
    return (real or summaries)[0]


def compare_runs(run_dirs: list[Path]) -> dict[str, Any]:
    """``{benchmark: {mode: {metric: {"runs": [...], "delta": last - first}}}}``.

    Each run is represented by its model (not its oracle, when it has one). Only
    metrics every run has are compared; deltas are in the runs' units
    (accuracies in [0, 1]).
    """
    runs = [{b: primary(s) for b, s in load_run(d).items()} for d in run_dirs]
    out: dict[str, Any] = {"runs": [d.name for d in run_dirs], "benchmarks": {}}
    shared = set(runs[0]).intersection(*runs[1:]) if runs else set()
    for bench in sorted(shared):
        modes = set(runs[0][bench].get("modes", {})).intersection(
            *(r[bench].get("modes", {}) for r in runs[1:])
        )
        per_mode: dict[str, Any] = {}
        for mode in sorted(modes):
            scores = [_scores(r[bench], mode) for r in runs]
            metrics = [m for m in _order(scores[0]) if all(m in s for s in scores)]
            per_mode[mode] = {
                m: {
                    "runs": [s[m] for s in scores],
                    "delta": scores[-1][m] - scores[0][m],
                }
                for m in metrics
            }
        out["benchmarks"][bench] = {
            "models": [r[bench].get("model") for r in runs],
            "modes": per_mode,
        }
    return out


def _order(scores: dict[str, float]) -> list[str]:
    known = [*BFCL_GROUP_COLUMNS, *CATEGORIES]
    return [m for m in known if m in scores] + sorted(m for m in scores if m not in known)
