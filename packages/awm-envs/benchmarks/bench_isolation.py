"""Benchmark: what OS isolation costs. Prints one JSON document (``--json``) or a table.

For each isolation mode available here (``bubblewrap``, and ``rlimits`` with
``AWM_SANDBOX_ISOLATION=off``) it measures:

* ``start_ms``: starting a sandboxed interpreter until it answers (a fork-per-job
  template with nothing preloaded, and one that preloads FastAPI + SQLAlchemy +
  the awm runtime, as environment workers and synthesis checks do);
* ``job_ms``: one empty job round trip (host -> template -> fresh fork -> back),
  the fixed cost every verification and synthesis check pays.

Run: ``uv run python packages/awm-envs/benchmarks/bench_isolation.py [--json]``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from awm_envs.sandbox import ForkServer, detect


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 3)


def _start(preload: list[str], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        with ForkServer("awm_envs.sandbox.probe:echo", preload=preload):
            samples.append(time.perf_counter() - t0)
    return _median_ms(samples)


def measure() -> dict[str, object]:
    out: dict[str, object] = {}
    for mode in ("bubblewrap", "rlimits"):
        if mode == "rlimits":
            os.environ["AWM_SANDBOX_ISOLATION"] = "off"
        elif not detect().isolated:
            out[mode] = {"available": False, "reason": detect().reason}
            continue
        server = ForkServer("awm_envs.sandbox.probe:echo").start()
        for _ in range(30):
            server.run({})
        samples = []
        for _ in range(300):
            t0 = time.perf_counter()
            server.run({})
            samples.append(time.perf_counter() - t0)
        server.close()
        out[mode] = {
            "available": True,
            "start_ms_bare": _start([], 5),
            "start_ms_runtime": _start(
                ["fastapi", "sqlalchemy.orm", "awm_envs.runtime.environment"], 3
            ),
            "job_ms_median": _median_ms(samples),
            "job_ms_p99": round(sorted(samples)[int(len(samples) * 0.99) - 1] * 1e3, 3),
        }
    os.environ.pop("AWM_SANDBOX_ISOLATION", None)
    return {"benchmark": "sandbox_isolation_cost", "cpus": os.cpu_count(), **out}


def main() -> None:
    result = measure()
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
        return
    for mode in ("bubblewrap", "rlimits"):
        row = result[mode]
        assert isinstance(row, dict)
        if not row.get("available"):
            print(f"{mode:<11} unavailable: {row.get('reason')}")
            continue
        print(
            f"{mode:<11} start {row['start_ms_bare']:>7.1f} ms bare, "
            f"{row['start_ms_runtime']:>7.1f} ms with the runtime; "
            f"job {row['job_ms_median']:.3f} ms median, {row['job_ms_p99']:.3f} ms p99"
        )


if __name__ == "__main__":
    main()
