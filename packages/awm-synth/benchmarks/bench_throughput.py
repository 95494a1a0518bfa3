"""Throughput of the synthesis pipeline against a slow OpenAI-protocol server (prints JSON).

A local OpenAI-compatible HTTP server (awm-core's ``ScriptedOpenAIServer``,
in its own process so its work does not share our interpreter lock) answers
every request from the replay recordings after an injected latency. The
pipeline runs the real stages, checks, checkpoints and cache over many clones
of the recorded scenarios through the ``openai:`` backend. With ``C`` requests
in flight and latency ``L`` the ideal is ``C / L`` requests per second;
we report the achieved rate over the whole run and over the saturated window
(from the first moment C requests are in flight to the last).

    uv run python packages/awm-synth/benchmarks/bench_throughput.py --envs 288
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

from awm_core.models import Scenario


def _serve(latency: float, port_queue: mp.Queue, stop: mp.Event) -> None:  # type: ignore[type-arg]
    from awm_core.llm.scripted_server import ScriptedOpenAIServer
    from awm_synth.llm.replay import replay_responder

    with ScriptedOpenAIServer(replay_responder(), latency_s=latency, model="replay") as server:
        port_queue.put(server.base_url)
        stop.wait()


def _scenarios(n: int) -> list[Scenario]:
    from awm_synth.llm.replay import recorded_scenarios

    bases = recorded_scenarios()
    return [
        Scenario(
            name=f"{bases[i % len(bases)]}__{i:04d}",
            description=f"clone {i} of {bases[i % len(bases)]}",
            category="bench",
        )
        for i in range(n)
    ]


def _saturated_rate(
    timeline: list[tuple[float, int]], concurrency: int
) -> tuple[float, float, int]:
    """Requests completed per second while ``concurrency`` requests were in flight."""
    full = [t for t, n in timeline if n >= concurrency]
    if len(full) < 2:
        return 0.0, 0.0, 0
    start, end = full[0], full[-1]
    completions = sum(
        1
        for (t, n), (_, prev) in zip(timeline[1:], timeline, strict=False)
        if n < prev and start < t <= end
    )
    return completions / (end - start), end - start, completions


async def _run(base_url: str, args: argparse.Namespace, out: Path) -> dict[str, object]:
    from awm_synth.config import SynthConfig
    from awm_synth.pipeline import make_llm, prepare_run, run_pipeline
    from awm_synth.stages import ENV_STAGES
    from awm_synth.store.checkpoint import RunDir

    stages = ENV_STAGES if args.full else ENV_STAGES[: ENV_STAGES.index("spec") + 1]
    run_dir = RunDir(out)
    config = prepare_run(
        run_dir,
        SynthConfig(backend="openai:replay", concurrency=args.concurrency, embedder="lexical"),
    )
    llm = make_llm(config, run_dir, base_url=base_url, api_key="bench", timeout_s=60.0)
    started = time.perf_counter()
    summary = await run_pipeline(
        run_dir, llm, config, stages=stages, scenarios=_scenarios(args.envs), trusted=args.trusted
    )
    wall = time.perf_counter() - started
    ideal = args.concurrency / args.latency
    rate = llm.requests_sent / wall
    sat_rate, sat_window, sat_completions = _saturated_rate(llm.timeline, args.concurrency)
    return {
        "envs": args.envs,
        "stages": list(stages),
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "requests": llm.requests_sent,
        "max_in_flight": llm.max_in_flight,
        "wall_s": round(wall, 2),
        "ideal_requests_per_s": round(ideal, 2),
        "requests_per_s": round(rate, 2),
        "efficiency": round(rate / ideal, 4),
        "saturated_window_s": round(sat_window, 2),
        "saturated_requests": sat_completions,
        "saturated_requests_per_s": round(sat_rate, 2),
        "saturated_efficiency": round(sat_rate / ideal, 4),
        "environments_completed": len(summary.statuses) if args.full else args.envs,
        "environments_shipped": len(summary.shipped) if args.full else None,
        "checks": (
            "none (LLM-bound stages only)"
            if not args.full
            else "trusted (in-process)"
            if args.trusted
            else "sandboxed"
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=288, help="Scenario clones to synthesise.")
    parser.add_argument(
        "--latency", type=float, default=2.0, help="Seconds the server waits per request."
    )
    parser.add_argument("--concurrency", type=int, default=64, help="Requests in flight.")
    parser.add_argument(
        "--full", action="store_true", help="All stages (code and verifier checks included)."
    )
    parser.add_argument(
        "--trusted",
        action="store_true",
        help="Run the code checks in this process (the pre-sandbox path), for comparison.",
    )
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    port_queue, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(args.latency, port_queue, stop), daemon=True)
    server.start()
    try:
        base_url = port_queue.get(timeout=120)
        with tempfile.TemporaryDirectory(prefix="awm-synth-bench-") as tmp:
            result = asyncio.run(_run(base_url, args, Path(tmp)))
    finally:
        stop.set()
        server.join(timeout=10)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
