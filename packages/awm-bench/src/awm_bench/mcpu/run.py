"""Run MCP-Universe tasks in awm and native modes, resumably; SR and AE per domain."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from awm_bench.journal import Journal
from awm_bench.mcpu.cases import (
    DOMAINS,
    McpuTask,
    corrupt_calls,
    domain_scores,
    evaluator_score,
    load_offline,
    load_source,
    select,
    task_success,
)
from awm_bench.mcpu.oracle import NO_GROUND_TRUTH, OracleBackend, OraclePolicy, reference_steps
from awm_bench.mcpu.services import require_services
from awm_bench.mcpu.upstream import Driver
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import ActingPolicy, Policy
from awm_core.llm.base import LLMBackend
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.models import Task

TASKS_ENV = "AWM_MCPU_TASKS"
"""A benchmark YAML or task folder to run instead of the offline set (``--tasks``)."""

MCPU_MAX_STEPS = 20
"""The agent's iterations when neither the task file nor ``--max-steps`` sets them."""

NATIVE_MODEL = "agent"
"""The name awm's endpoint serves the model under, for MCP-Universe's ``openai`` LLM."""


def load_tasks(config: BenchmarkConfig) -> list[McpuTask]:
    """The tasks of one run: ``--tasks`` / ``AWM_MCPU_TASKS`` (any MCP-Universe benchmark
    YAML or task folder), else awm's offline set; ``--only`` domains, ``--limit`` each."""
    source = config.tasks or os.environ.get(TASKS_ENV)
    tasks = load_source(Path(source)) if source else load_offline(DOMAINS)
    return select(tasks, config.only, None if config.full else config.limit)


def run_mcpu(config: BenchmarkConfig, tasks: list[McpuTask]) -> dict[str, Any]:
    """Run every task in each mode; write ``MODE.jsonl`` and ``summary.json``."""
    return asyncio.run(_run(config, tasks))


async def _run(config: BenchmarkConfig, tasks: list[McpuTask]) -> dict[str, Any]:
    from awm_core.llm.http_server import BackgroundServer
    from awm_core.llm.serve import build_backend_app

    config.out.mkdir(parents=True, exist_ok=True)
    oracle = config.model == "oracle"
    oracle_backend = OracleBackend()
    backend: LLMBackend = oracle_backend
    if not oracle:
        from awm_core import get_backend

        cache = ResponseCache(config.out / "cache" / "agent")
        backend = CachingBackend(get_backend(config.model), cache, sampling=config.sampling)
    summary: dict[str, Any] = {
        "benchmark": "mcpuniverse",
        "title": "MCP-Universe",
        "model": config.model,
        "corruption": config.corruption,
        "subset": _subset_label(config, tasks),
        "note": "SR: task success rate (every MCP-Universe evaluator passed), AE: mean share "
        "of evaluators passed, in % per domain; MCP-Universe's own Evaluator (mcpuniverse "
        "1.1.3). Default tasks: awm-authored offline tasks in MCP-Universe's format, "
        "not the paper's.",
        "modes": {},
    }
    with BackgroundServer(build_backend_app(backend, model_name=NATIVE_MODEL)) as server:
        async with Driver(config.out / "mcpuniverse-driver.log") as driver:
            await require_services(driver, tasks)  # every key and command, before any task
            for mode in config.modes:
                started = time.perf_counter()
                journal = Journal(
                    config.out / f"{mode}.jsonl",
                    "key",
                    (t.id for t in tasks),
                    label=f"mcpuniverse {mode}",
                    progress=config.progress,
                )
                todo = [t for t in tasks if t.id not in journal]
                for task in todo:
                    truth = task.oracle
                    calls = corrupt_calls(truth.calls, config.corruption) if truth else []
                    answer = truth.answer if truth else NO_GROUND_TRUTH
                    oracle_backend.calls, oracle_backend.answer = calls, answer
                    t0 = time.perf_counter()
                    if mode == "awm":
                        row = await _awm(config, driver, task, backend, calls, answer)
                    else:
                        row = await _native(config, driver, task, server.base_url)
                    results = row.pop("results")
                    row = {
                        "key": task.id,
                        "domain": task.domain,
                        "task_id": task.id,
                        "success": task_success(results),
                        "evaluator_score": evaluator_score(results),
                        "evaluations": results,
                        **row,
                        "wall_s": round(time.perf_counter() - t0, 3),
                    }
                    journal.add(row)
                rows = journal.rows()
                summary["modes"][mode] = mode_summary(rows, time.perf_counter() - started)
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


async def _awm(
    config: BenchmarkConfig,
    driver: Driver,
    task: McpuTask,
    backend: LLMBackend,
    calls: list[Any],
    answer: Any,
) -> dict[str, Any]:
    from awm_bench.mcpu.episode import MCPU_SETTINGS, McpuSession, run_task_awm

    policy_for: Callable[[Task, McpuSession], ActingPolicy]
    if config.model == "oracle":

        def policy_for(awm_task: Task, session: McpuSession) -> ActingPolicy:
            scripted = awm_task.model_copy(update={"reference_solution": reference_steps(calls)})
            return OraclePolicy(scripted, answer, session.results)

    else:

        def policy_for(awm_task: Task, session: McpuSession) -> ActingPolicy:
            return Policy(backend)  # decoded with config.sampling (the backend applies it)

    agent = agent_config(config, task)
    # the oracle's steps: list_tools, each call, the answer; a model's: list_tools and
    # the agent's iterations (the budget MCP-Universe's prompt states)
    steps = len(calls) + 2 if config.model == "oracle" else int(agent["max_iterations"]) + 1
    settings = replace(MCPU_SETTINGS, max_steps=max(steps, 2))
    run = await run_task_awm(driver, task, policy_for, settings=settings, agent=agent)
    return {
        "results": run.results,
        "answer": run.answer,
        "calls": run.calls,
        "termination": run.termination,
        "error": run.error,
    }


async def _native(
    config: BenchmarkConfig, driver: Driver, task: McpuTask, base_url: str
) -> dict[str, Any]:
    agent = agent_config(config, task)
    llm = {
        "model": NATIVE_MODEL,
        "base_url": base_url,
        "api_key": "EMPTY",
        **_llm_sampling(config),
    }
    out = await driver.request(
        "native", task=str(task.path), agent=agent, servers=list(task.servers), llm=llm
    )
    return {"results": out["results"], "answer": out.get("answer"), "calls": out.get("calls")}


def agent_config(config: BenchmarkConfig, task: McpuTask) -> dict[str, Any]:
    """The function_call agent's config in both modes: the benchmark's, its
    ``max_iterations`` from ``--max-steps`` for a model, else the benchmark's own (or
    :data:`MCPU_MAX_STEPS`); the oracle keeps the benchmark's (it needs one iteration per
    call and one to answer)."""
    agent = dict(task.agent)
    if config.model == "oracle" or config.max_steps is None:
        agent.setdefault("max_iterations", MCPU_MAX_STEPS)
    else:
        agent["max_iterations"] = config.max_steps
    return agent


def _llm_sampling(config: BenchmarkConfig) -> dict[str, Any]:
    """The run's sampling as MCP-Universe's OpenAI LLM config spells it (set fields only)."""
    s = config.sampling
    named = {
        "temperature": s.temperature,
        "top_p": s.top_p,
        "max_completion_tokens": s.max_tokens,
        "seed": s.seed,
    }
    return {k: v for k, v in named.items() if v is not None}


def mode_summary(rows: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    """One mode's scores: per domain SR and AE, the overall SR as the headline."""
    domains = domain_scores(rows)
    table: dict[str, Any] = {}
    for domain, scores in domains.items():
        table[f"{domain} SR"] = scores["SR"]
        table[f"{domain} AE"] = scores["AE"]
    correct = sum(bool(r["success"]) for r in rows)
    headline = correct / len(rows) if rows else 0.0
    table["overall SR"] = headline
    return {
        "cases": len(rows),
        "correct": correct,
        "domains": domains,
        "table": table,
        "headline": headline,
        "wall_s": round(wall_s, 2),
    }


def _subset_label(config: BenchmarkConfig, tasks: list[McpuTask]) -> str:
    source = config.tasks or os.environ.get(TASKS_ENV)
    what = str(source) if source else "awm offline set"
    if config.full or config.limit is None:
        return f"{what}: {len(tasks)} tasks"
    return f"{what}: {config.limit} per domain ({len(tasks)} tasks)"
