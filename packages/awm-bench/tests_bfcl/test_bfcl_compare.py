"""``awm bench compare``'s Table 5 count on BFCLv3's own data (bfcl-eval 2025.8.6.2)."""

from __future__ import annotations

import json
from pathlib import Path

from awm_bench.bfcl.cases import CATEGORIES, oracle_calls, required_calls
from awm_bench.bfcl.data import load_cases
from awm_bench.bfcl.run import run_bfcl
from awm_bench.compare import compare_runs
from awm_core.contracts import BenchmarkConfig


def test_required_calls_are_the_ground_truths_calls_on_every_v3_case() -> None:
    cases = load_cases(CATEGORIES, per_category=None)
    assert len(cases) == 4441
    for case in cases:
        if case.category == "live_relevance":  # no ground truth: any one call passes
            assert case.ground_truth == [] and required_calls(case) == 1
            continue
        assert required_calls(case) == sum(len(t) for t in oracle_calls(case)), case.id
    counts = {required_calls(c) for c in cases}
    assert 0 in counts and max(counts) > 10  # irrelevance, and long multi-turn cases


def test_an_oracle_run_records_the_counts_and_compare_buckets_them(tmp_path: Path) -> None:
    cases = load_cases(CATEGORIES, per_category=1)
    run = tmp_path / "oracle"
    config = BenchmarkConfig(out=run / "bfcl" / "oracle", modes=("awm",))
    run_bfcl(config, cases)
    rows = [json.loads(x) for x in (config.out / "awm.jsonl").read_text().splitlines()]
    assert {r["case_id"]: r["gt_calls"] for r in rows} == {c.id: required_calls(c) for c in cases}
    table5 = compare_runs([run, run])["table5"]["awm"]["bfcl"]
    row = table5["rows"][0]
    assert sum(row["counts"].values()) == len(cases) and row["counts"]["none"] == 2
