"""awm's own tasks as a benchmark of ``awm bench run`` / ``nox -s bench``: Pass@1 by complexity.

The same evaluation as ``awm bench tasks`` (:func:`awm_bench.evaluate.evaluate_environment`)
over the catalog environments, resumable per environment. The oracle replays each
task's reference solution; a model is judged ``code+llm`` by itself when it is an
endpoint (``openai:...``), ``code`` otherwise (a 135M local model cannot judge).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

from awm_core.contracts import BenchmarkConfig
from awm_core.llm.sampling import Sampling

DEFAULT_ENVS = ("shop", "bank")


class AwmTasksBenchmark:
    """Pass@1 by complexity on awm's catalog environments (no extra package needed)."""

    name = "tasks"
    title = "awm tasks (Pass@1 by complexity)"
    modes = ("awm",)
    sampling = Sampling(temperature=0.0)  # greedy: Pass@1 of one deterministic attempt

    def available(self) -> str | None:
        return None

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Copy ``limit`` catalog bundles (they are awm bundles already) under ``dest``."""
        from awm_envs import catalog_env_ids, load_environment

        out = []
        for env_id in sorted(catalog_env_ids())[:limit]:
            env = load_environment(env_id)
            target = dest / env_id
            shutil.copytree(env.path, target, dirs_exist_ok=True)
            out.append(target)
        return out

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        from awm_bench.evaluate import BUCKETS, PolicyFactory, evaluate_environment
        from awm_bench.journal import Journal
        from awm_core import get_judge
        from awm_core.contracts import Judge, default_judge
        from awm_core.episode import ActingPolicy, EpisodeSettings, Policy, ReferencePolicy
        from awm_core.models import Task
        from awm_envs import catalog_env_ids, load_environment

        config.out.mkdir(parents=True, exist_ok=True)
        envs = sorted(catalog_env_ids()) if config.full else list(DEFAULT_ENVS)
        if config.only:
            envs = list(config.only)
        journal = Journal(
            config.out / "awm.jsonl", "env_id", envs, label="tasks awm", progress=config.progress
        )
        # an OpenAI-compatible model under test is the judge model too; others judge by code
        judge_model = config.model if config.model.startswith("openai:") else None
        options = {"model": judge_model} if judge_model else {}
        judge: Judge = get_judge(default_judge(judge_model), **options)
        factory: PolicyFactory
        if config.model == "oracle":
            factory = ReferencePolicy
        else:
            from awm_core import get_backend
            from awm_core.llm.cache import CachingBackend, ResponseCache

            cache = ResponseCache(config.out / "cache" / "awm")
            backend = CachingBackend(get_backend(config.model), cache, sampling=config.sampling)

            def model_policy(task: Task) -> ActingPolicy:
                return Policy(backend)  # decoded with config.sampling (the backend applies it)

            factory = model_policy
        started = time.perf_counter()
        loop = asyncio.new_event_loop()  # one loop: a backend's HTTP client lives on its loop
        for env_id in journal.todo():
            environment = load_environment(env_id)
            chosen = environment.tasks if config.full else environment.tasks[: config.limit]
            report = loop.run_until_complete(
                evaluate_environment(
                    environment,
                    factory,
                    tasks=chosen,
                    judge=judge,
                    settings=EpisodeSettings(
                        max_steps=config.max_steps or EpisodeSettings.max_steps
                    ),
                )
            )
            journal.add(report.to_json())
        loop.close()
        passed: dict[str, list[int]] = {b: [0, 0] for b in BUCKETS}
        for env_id in envs:
            for b, v in journal.done[env_id]["pass_rate_by_complexity"].items():
                passed[b][0] += v["passed"]
                passed[b][1] += v["total"]
        total = [sum(v[0] for v in passed.values()), sum(v[1] for v in passed.values())]
        table: dict[str, Any] = {b: v[0] / v[1] for b, v in passed.items() if v[1]}
        table["overall"] = total[0] / total[1] if total[1] else 0.0
        summary = {
            "benchmark": self.name,
            "title": self.title,
            "model": config.model,
            "corruption": None,
            "subset": "all catalog environments"
            if config.full
            else ", ".join(envs) + (f" ({config.limit} tasks each)" if config.limit else ""),
            "note": "Pass@1 in %, by the complexity of the reference solution.",
            "modes": {
                "awm": {
                    "cases": total[1],
                    "correct": total[0],
                    "table": table,
                    "headline": table["overall"],
                    "wall_s": round(time.perf_counter() - started, 2),
                }
            },
        }
        (config.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        return summary
