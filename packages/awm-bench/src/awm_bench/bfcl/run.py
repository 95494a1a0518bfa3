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
from awm_bench.bfcl.handlers import HandlerSetupError, HandlerSpec
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
    """Run ``cases`` in each of ``config.modes``; write ``MODE.jsonl`` and ``summary.json``.

    Native mode runs bfcl-eval's handler ``config.handler``
    (:func:`awm_bench.bfcl.handlers.resolve_handler`; awm's default when None), named in
    the summary and on every row; a run resumed with another handler is refused.
    """
    from awm_bench.bfcl.handlers import check_model, resolve_handler

    spec = resolve_handler(config.handler)
    if "native" in config.modes:
        check_model(spec, config.model)
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
    if "native" in config.modes:
        summary["handler"] = {**spec.to_json(), "label": spec.label}
    for mode in config.modes:
        started = time.perf_counter()
        journal = Journal(
            config.out / f"{mode}.jsonl",
            "case_id",
            (c.id for c in cases),
            label=f"bfcl {mode}",
            progress=config.progress,
        )
        if mode == "native":
            _same_handler(journal.rows(), spec, config.out / f"{mode}.jsonl")
        todo = [c for c in cases if c.id not in journal]
        rows_of = _run_awm(config, todo) if mode == "awm" else _run_native(config, todo, spec)
        for row in rows_of:
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
        if mode == "native":
            summary["modes"][mode]["handler"] = spec.label
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


def _same_handler(rows: list[dict[str, Any]], spec: HandlerSpec, path: Path) -> None:
    """Refuse to resume native rows another handler wrote (rows before ``--handler``
    existed were awm's default handler's)."""
    from awm_bench.bfcl.handlers import DEFAULT_HANDLER

    used = {str(r.get("handler", DEFAULT_HANDLER)) for r in rows}
    if used - {spec.label}:
        raise HandlerSetupError(
            f"{path} holds native results of handler {', '.join(sorted(used))}, not "
            f"{spec.label}: run another handler under another --run"
        )


def _run_native(config: BenchmarkConfig, cases: list[BfclCase], spec: HandlerSpec) -> Any:
    from awm_bench.bfcl.native import (
        Completer,
        OracleBackend,
        PromptTokenizer,
        infer,
        load_tokenizer,
        oracle_tokenizer,
        serve_app,
        upstream_completions,
    )
    from awm_core.llm.http_server import BackgroundServer

    oracle = OracleBackend(corruption=config.corruption, spec=spec)
    cache = config.out / "cache" / "native"
    backend: LLMBackend = oracle if config.model == "oracle" else _backend(config, cache)
    served = "bfcl-oracle" if config.model == "oracle" else config.model.replace(":", "-")
    complete: Completer | None = None
    tokenizer: PromptTokenizer | None = None
    if spec.kind == "completions" and cases:
        if config.model == "oracle":
            complete, tokenizer = oracle.complete, oracle_tokenizer()
        else:
            complete = upstream_completions(
                spec, config.model, ResponseCache(cache), config.sampling
            )
            tokenizer = load_tokenizer(spec)
    with BackgroundServer(serve_app(backend, model_name=served, complete=complete)) as server:
        for case in cases:
            oracle.start(case)
            started = time.perf_counter()
            output = infer(
                case,
                base_url=server.base_url,
                model=served,
                temperature=config.sampling.temperature,
                spec=spec,
                tokenizer=tokenizer,
            )
            score = score_case(case, output, mode="native", model=spec.score_model)
            yield _row(case, score, output, time.perf_counter() - started, handler=spec.label)
