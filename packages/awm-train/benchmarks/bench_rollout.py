"""Where a training rollout's time goes: generation vs environment vs verification.

``python packages/awm-train/benchmarks/bench_rollout.py [--episodes N] [--json]``

Rolls out catalog tasks through ``run_training_episode`` twice: with a tiny
random Qwen3 generating on this CPU (generation-bound, like a real model) and
with a scripted perfect model (environment- and verifier-bound: every tool call
of the reference solution runs and the verifier runs on a solved database).
Prints per-rollout seconds and the environment + verification share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from awm_envs import EnvPool, load_environment
from awm_train.episode import run_training_episode
from awm_train.offline import smollm2_tokenizer, tiny_qwen3
from awm_train.policy import TokenPolicy
from awm_train.tokens import ScriptedGenerator, TransformersGenerator


async def _measure(env_ids: list[str], episodes: int, make_policy: Any) -> dict[str, Any]:
    rows: list[dict[str, float]] = []
    turns = 0
    for env_id in env_ids:
        env = load_environment(env_id)
        source = (env.path / "verifiers.py").read_text(encoding="utf-8")
        async with EnvPool(env, size=2) as pool:
            for task in env.tasks[:episodes]:
                ep = await run_training_episode(
                    pool, env, task, make_policy(task), verifier_source=source
                )
                rows.append({k: ep.metrics[k] for k in ("generate_s", "env_s", "verify_s")})
                turns += len(ep.rows)
    total = {k: sum(r[k] for r in rows) for k in ("generate_s", "env_s", "verify_s")}
    wall = sum(total.values())
    return {
        "rollouts": len(rows),
        "rows": turns,
        "seconds_per_rollout": {k: round(v / len(rows), 4) for k, v in total.items()},
        "env_overhead_share": round((total["env_s"] + total["verify_s"]) / wall, 4),
        "median_verify_s": round(statistics.median(r["verify_s"] for r in rows), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="shop,bank,food", help="Catalog ids, comma-separated.")
    parser.add_argument("--episodes", type=int, default=3, help="Tasks per environment.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    args = parser.parse_args()
    env_ids = [e for e in args.envs.split(",") if e]
    tokenizer = smollm2_tokenizer()
    model = tiny_qwen3(tokenizer)
    started = time.perf_counter()
    report = {
        "tiny_qwen3_cpu": asyncio.run(
            _measure(
                env_ids,
                args.episodes,
                lambda task: TokenPolicy(
                    TransformersGenerator(model, tokenizer),
                    tokenizer,
                    max_new_tokens=64,
                    temperature=1.0,
                ),
            )
        ),
        "scripted_reference": asyncio.run(
            _measure(
                env_ids,
                args.episodes,
                lambda task: TokenPolicy(ScriptedGenerator.reference(tokenizer, task), tokenizer),
            )
        ),
    }
    report["wall_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, r in report.items():
        if isinstance(r, dict):
            print(
                f"{name}: {r['rollouts']} rollouts, {r['rows']} rows, per rollout "
                f"{r['seconds_per_rollout']}, env+verify share {r['env_overhead_share']:.1%}"
            )


if __name__ == "__main__":
    main()
