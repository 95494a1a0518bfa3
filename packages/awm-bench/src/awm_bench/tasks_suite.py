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

from awm_bench.suite import SuiteConfig

DEFAULT_ENVS = ("shop", "bank")


class AwmTasksBenchmark:
    """Pass@1 by complexity on awm's catalog environments (no extra package needed)."""

    name = "tasks"
    title = "awm tasks (Pass@1 by complexity)"
    modes = ("awm",)

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

    def run(self, config: SuiteConfig) -> dict[str, Any]:
        from awm_bench.evaluate import BUCKETS, PolicyFactory, evaluate_environment
        from awm_core.contracts import Judge
        from awm_core.episode import ActingPolicy, Policy, ReferencePolicy
        from awm_core.models import Task
        from awm_envs import catalog_env_ids, load_environment
        from awm_verify import get_judge

        config.out.mkdir(parents=True, exist_ok=True)
        envs = sorted(catalog_env_ids()) if config.full else list(DEFAULT_ENVS)
        if config.only:
            envs = list(config.only)
        path = config.out / "awm.jsonl"
        done = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    done[row["env_id"]] = row
                except (ValueError, KeyError):
                    continue
        factory: PolicyFactory
        judge: Judge = get_judge("code")
        if config.model == "oracle":
            factory = ReferencePolicy
        else:
            from awm_bench.cache import CachingBackend
            from awm_core.llm import get_backend

            backend = CachingBackend(get_backend(config.model), config.out / "cache" / "awm.jsonl")

            def model_policy(task: Task) -> ActingPolicy:
                return Policy(backend, temperature=0.0)

            factory = model_policy
            if config.model.startswith("openai:"):
                judge = get_judge("code+llm", model=config.model)
        started = time.perf_counter()
        loop = asyncio.new_event_loop()  # one loop: a backend's HTTP client lives on its loop
        for n, env_id in enumerate(envs, start=1):
            if env_id in done:
                continue
            environment = load_environment(env_id)
            chosen = environment.tasks if config.full else environment.tasks[: config.limit]
            report = loop.run_until_complete(
                evaluate_environment(
                    environment,
                    factory,
                    tasks=chosen,
                    judge=judge,
                    max_steps=config.max_steps,
                )
            )
            row = report.to_json()
            done[env_id] = row
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, default=str) + "\n")
            if config.progress:
                config.progress("tasks awm", n, len(envs))
        loop.close()
        passed: dict[str, list[int]] = {b: [0, 0] for b in BUCKETS}
        for env_id in envs:
            for b, v in done[env_id]["pass_rate_by_complexity"].items():
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
