"""Hundreds of sandboxed environments on one node: memory, cold start and calls/s.

``--envs`` distinct environments (copies of the catalog's, each with its own id and app
source) x ``--instances`` live instances each, every environment in its own
``EnvPool(workers=1)``: sandboxed, its app imported only in its worker. Run once with
workers forked from the pre-imported template (``template=True``) and once, for
``--baseline-envs`` environments, with workers started as fresh interpreters (the
default), so the figures before and after sit side by side.

Memory is the proportional set size (PSS: shared pages divided among the processes
sharing them) summed over every process this benchmark started, so library pages shared
by forked workers count once, not once per worker. Prints the figures with their
targets; ``--json`` for a machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from awm_envs import EnvPool
from awm_envs.bundle.sources import CATALOG_DIR

TARGETS = {"total_memory_gib": ("<=", 4.0), "cold_worker_first_call_ms": ("<=", 100.0)}
# read-only calls each catalog environment answers with no arguments
CALLS = {
    "bank": "list_accounts",
    "shop": "list_my_orders",
    "clinic": "list_my_appointments",
    "food": "list_my_orders",
    "rentals": "list_my_leases",
}


def _descendants(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = [int(c) for c in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            continue
    return out


def _pss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def make_envs(root: Path, n: int) -> list[tuple[Path, str]]:
    """``n`` distinct environments: catalog copies with their own id and app source."""
    names = sorted(CALLS)
    out = []
    for i in range(n):
        base = names[i % len(names)]
        target = root / f"{base}_{i}"
        shutil.copytree(CATALOG_DIR / base, target)
        manifest = json.loads((target / "manifest.json").read_text())
        manifest["id"] = f"{base}_{i}"
        (target / "manifest.json").write_text(json.dumps(manifest))
        with (target / "app.py").open("a") as f:
            f.write(f"\n# fleet copy {i}\n")  # distinct content, so a distinct module
        out.append((target, CALLS[base]))
    return out


async def run(
    envs: list[tuple[Path, str]], instances: int, template: bool, seconds: float
) -> dict[str, Any]:
    pools: list[EnvPool] = []
    cold: list[dict[str, float]] = []
    started = time.perf_counter()
    try:
        for path, tool in envs:
            t0 = time.perf_counter()
            pool = EnvPool(path, size=instances, workers=1, template=template)
            await pool.start()
            t1 = time.perf_counter()
            inst = await pool.acquire()
            result = await inst.call_tool(tool, {})
            t2 = time.perf_counter()
            if result.is_error:
                raise RuntimeError(f"{path.name}: {tool} failed: {result.content}")
            await pool.release(inst)
            worker = pool.worker_pool.workers[0]
            cold.append(
                {
                    "worker_ready_ms": (worker.start_s or 0.0) * 1000,
                    "pool_ready_ms": (t1 - t0) * 1000,
                    "first_call_ms": (t2 - t1) * 1000,
                }
            )
            pools.append(pool)
        setup_s = time.perf_counter() - started
        await asyncio.sleep(0.5)
        pss = _pss_mib(_descendants(os.getpid()))
        # calls/s across every environment: 64 concurrent callers, random environments
        deadline = time.monotonic() + seconds
        done = 0
        rng = random.Random(0)

        async def caller() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                k = rng.randrange(len(pools))
                inst = await pools[k].acquire()
                try:
                    await inst.call_tool(envs[k][1], {})
                finally:
                    await pools[k].release(inst)
                done += 1

        t = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(64)))
        rate = done / (time.perf_counter() - t)
    finally:
        await asyncio.gather(*(p.close() for p in pools), return_exceptions=True)

    def med(key: str) -> float:
        return round(statistics.median(c[key] for c in cold), 1)

    return {
        "template": template,
        "environments": len(envs),
        "instances": len(envs) * instances,
        "setup_s": round(setup_s, 1),
        "total_pss_mib": round(pss, 1),
        "pss_per_environment_mib": round(pss / len(envs), 2),
        "worker_ready_ms_median": med("worker_ready_ms"),
        "environment_ready_ms_median": med("pool_ready_ms"),
        "first_call_ms_median": med("first_call_ms"),
        "cold_worker_first_call_ms": round(med("worker_ready_ms") + med("first_call_ms"), 1),
        "calls_per_s": round(rate, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=128, help="environments with forked workers")
    ap.add_argument("--instances", type=int, default=8, help="live instances per environment")
    ap.add_argument(
        "--baseline-envs",
        type=int,
        default=16,
        help="environments with fresh-interpreter workers (0: skip)",
    )
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the calls/s run")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="awm-fleet-"))
    try:
        envs = make_envs(root, max(args.envs, args.baseline_envs))
        after = asyncio.run(run(envs[: args.envs], args.instances, True, args.seconds))
        before = (
            asyncio.run(run(envs[: args.baseline_envs], args.instances, False, args.seconds))
            if args.baseline_envs
            else None
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures = {
        "total_memory_gib": round(after["total_pss_mib"] / 1024, 3),
        "cold_worker_first_call_ms": after["cold_worker_first_call_ms"],
    }
    report = {
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "template": after,
        "fresh_interpreters": before,
        "targets": {},
    }
    for key, (op, goal) in TARGETS.items():
        value = figures[key]
        ok = value <= goal if op == "<=" else value >= goal
        report["targets"][key] = {"value": value, "goal": f"{op} {goal}", "met": ok}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{args.envs} environments x {args.instances} instances, sandboxed, workers forked from the template:"
    )
    for k, v in after.items():
        print(f"  {k:32} {v}")
    if before:
        print(f"{args.baseline_envs} environments, workers started as fresh interpreters (before):")
        for k, v in before.items():
            print(f"  {k:32} {v}")
    for key, t in report["targets"].items():
        print(f"  target {key}: {t['value']} ({t['goal']}) {'met' if t['met'] else 'NOT met'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
