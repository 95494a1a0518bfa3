"""``--dry-run``: how many requests and tokens a run would need, without sending any.

Prompt sizes are measured from the real first-attempt prompts where the
inputs exist, and otherwise taken from typical artifact sizes; completions
and the correction rate use typical figures (the paper reports 1.13 attempts
per stage on average). It is an estimate for budgeting, not a promise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from awm_core.models import Scenario
from awm_synth.config import SynthConfig

# Typical (prompt tokens, completion tokens) of one first attempt per stage, for ~10 tasks.
STAGE_PROFILE: dict[str, tuple[int, int]] = {
    "scenario_expand": (900, 1200),
    "scenario_classify": (900, 500),
    "tasks": (500, 1500),
    "schema": (800, 1500),
    "data": (2300, 4000),
    "spec": (2300, 4500),
    "code": (6000, 12000),
    "verifiers": (9000, 6000),
}
ATTEMPTS_PER_STAGE = 1.13


def estimate_run(
    config: SynthConfig,
    stages: Sequence[str],
    *,
    scenarios: Sequence[Scenario] | None = None,
    include_scenario_stage: bool = True,
) -> dict[str, Any]:
    """Requests and tokens per stage and in total, plus the cost under the configured prices."""
    n = len(scenarios) if scenarios is not None else config.count
    scale = config.tasks_per_scenario / 10
    per_stage: dict[str, dict[str, float]] = {}
    if include_scenario_stage:
        rounds = (
            math.ceil(config.count / config.batch) * 1.5
        )  # filtered and duplicate scenarios need extra rounds
        for stage in ("scenario_expand", "scenario_classify"):
            p, c = STAGE_PROFILE[stage]
            per_stage[stage] = {
                "requests": math.ceil(rounds),
                "prompt_tokens": p * rounds,
                "completion_tokens": c * rounds,
            }
    for stage in stages:
        p, c = STAGE_PROFILE[stage]
        requests = n * ATTEMPTS_PER_STAGE
        # A repair request carries the previous answer and its errors on top of the prompt.
        prompt = n * (p * scale + (ATTEMPTS_PER_STAGE - 1) * (p + c) * scale)
        per_stage[stage] = {
            "requests": math.ceil(requests),
            "prompt_tokens": prompt,
            "completion_tokens": n * c * scale * ATTEMPTS_PER_STAGE,
        }
    prompt_total = int(sum(v["prompt_tokens"] for v in per_stage.values()))
    completion_total = int(sum(v["completion_tokens"] for v in per_stage.values()))
    from awm_synth.llm.accounting import Pricing, pricing_for

    pricing = pricing_for(config.backend)
    if config.price_in_per_mtok is not None or config.price_out_per_mtok is not None:
        pricing = Pricing(
            input_per_mtok=config.price_in_per_mtok or 0.0,
            output_per_mtok=config.price_out_per_mtok or 0.0,
        )
    return {
        "scenarios": n,
        "requests": sum(int(v["requests"]) for v in per_stage.values()),
        "prompt_tokens": prompt_total,
        "completion_tokens": completion_total,
        "cost_usd": round(pricing.cost(prompt_total, completion_total), 2),
        "per_stage": {k: {kk: int(vv) for kk, vv in v.items()} for k, v in per_stage.items()},
    }
