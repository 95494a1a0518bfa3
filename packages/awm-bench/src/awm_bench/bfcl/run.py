"""Run BFCLv3 in awm mode and native mode, resumably, and summarise as v3 does."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from awm_bench.bfcl.cases import (
    CATEGORIES,
    ORACLE_UNREACHABLE,
    BfclCase,
    overall,
    required_calls,
)
from awm_bench.bfcl.scoring import CaseScore, category_scores, score_case
from awm_bench.journal import Journal
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import ActingPolicy, Policy, ReferencePolicy
from awm_core.llm.base import LLMBackend
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.models import Task

DEFAULT_LIMIT = 2
"""Cases per category in the default offline subset (17 categories)."""


def _backend(config: BenchmarkConfig, cache: Path) -> LLMBackend:
    from awm_core import get_backend

    return CachingBackend(get_backend(config.model), ResponseCache(cache), sampling=config.sampling)


def run_bfcl(config: BenchmarkConfig, cases: list[BfclCase]) -> dict[str, Any]:
    """Run ``cases`` in each of ``config.modes``; write ``MODE.jsonl`` and ``summary.json``."""
    config.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {
        "benchmark": "bfcl",
        "title": "BFCLv3",
        "model": config.model,
        "corruption": config.corruption,
        "subset": ("full" if config.full else f"{config.limit or DEFAULT_LIMIT} per category")
        + (f" of {', '.join(config.only)}" if config.only else ""),
        "modes": {},
    }
    for mode in config.modes:
        started = time.perf_counter()
        journal = Journal(
            config.out / f"{mode}.jsonl",
            "case_id",
            (c.id for c in cases),
            label=f"bfcl {mode}",
            progress=config.progress,
        )
        todo = [c for c in cases if c.id not in journal]
        runner = _run_awm if mode == "awm" else _run_native
        for row in runner(config, todo):
            journal.add(row)
        rows = journal.rows()
        scores = [CaseScore(r["case_id"], r["category"], r["valid"]) for r in rows]
        cats = category_scores(scores)
        reachable = [r for r in rows if r["case_id"] not in ORACLE_UNREACHABLE]
        summary["modes"][mode] = {
            "cases": len(rows),
            "correct": sum(r["valid"] for r in rows),
            "correct_reachable": sum(r["valid"] for r in reachable),
            "reachable": len(reachable),
            "categories": {
                c: {"correct": s.correct, "total": s.total, "accuracy": s.accuracy}
                for c, s in sorted(cats.items(), key=lambda kv: CATEGORIES.index(kv[0]))
            },
            "groups": overall(cats),
            # bfcl-eval counts a missing category as 0 and shows the group as N/A
            "complete": all(c in cats for c in CATEGORIES),
            "wall_s": round(time.perf_counter() - started, 2),
        }
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def _row(
    case: BfclCase, score: CaseScore, output: Any, wall_s: float, **extra: Any
) -> dict[str, Any]:
    return {
        **score.to_json(),
        "case_id": case.id,
        "gt_calls": required_calls(case),  # the Table 5 complexity (awm bench compare)
        "output": output,
        "wall_s": round(wall_s, 3),
        **extra,
    }


def _run_awm(config: BenchmarkConfig, cases: list[BfclCase]) -> Any:
    from awm_bench.bfcl.episode import BFCL_SETTINGS, run_case

    policy_for: Callable[[Task], ActingPolicy]
    if config.model == "oracle":
        policy_for = ReferencePolicy
    else:
        backend = _backend(config, config.out / "cache" / "awm")

        def policy_for(task: Task) -> ActingPolicy:
            return Policy(backend)  # decoded with config.sampling (the backend applies it)

    # one event loop for the whole run: a backend's HTTP client lives on the loop it was made on
    settings = replace(BFCL_SETTINGS, max_steps=config.max_steps or BFCL_SETTINGS.max_steps)
    loop = asyncio.new_event_loop()
    try:
        for case in cases:
            started = time.perf_counter()
            run = loop.run_until_complete(
                run_case(case, policy_for, settings=settings, corruption=config.corruption)
            )
            steps = sum(len(t.steps) for t in run.trajectories)
            yield _row(case, run.score, run.output, time.perf_counter() - started, steps=steps)
    finally:
        loop.close()


def _run_native(config: BenchmarkConfig, cases: list[BfclCase]) -> Any:
    from awm_bench.bfcl.native import OracleBackend, infer
    from awm_core.llm.http_server import BackgroundServer
    from awm_core.llm.serve import build_backend_app

    oracle = OracleBackend(corruption=config.corruption)
    backend: LLMBackend = (
        oracle if config.model == "oracle" else _backend(config, config.out / "cache" / "native")
    )
    served = "bfcl-oracle" if config.model == "oracle" else config.model.replace(":", "-")
    with BackgroundServer(build_backend_app(backend, model_name=served)) as server:
        for case in cases:
            oracle.case = case
            started = time.perf_counter()
            output = infer(
                case,
                base_url=server.base_url,
                model=served,
                temperature=config.sampling.temperature,
            )
            score = score_case(case, output, mode="native")
            yield _row(case, score, output, time.perf_counter() - started)
