"""Stage: scenarios. Self-instruct expansion, an LLM suitability filter, embedding dedup, category caps.

Rounds repeat until enough scenarios are kept or a round brings nothing new.
Each round's requests are tagged with the round number, so a resumed run hits
the cache for every round already answered.
"""

from __future__ import annotations

import math
import time
from collections import Counter

from awm_core.llm.base import LLMOutputError
from awm_core.models import Scenario
from awm_synth.config import SynthConfig
from awm_synth.diversity.dedup import deduplicate
from awm_synth.diversity.embedding import get_embedder
from awm_synth.diversity.seeds import seeds_for_round
from awm_synth.llm.accounting import StageStats
from awm_synth.llm.client import SynthLLM
from awm_synth.llm.parsing import parse_json_model
from awm_synth.llm.tags import GLOBAL_SCENARIO, RequestKey
from awm_synth.stages.prompts import scenario_classification, scenario_expansion
from awm_synth.store.artifacts import ScenarioBatch, ScenarioSelection, ScenarioVerdicts
from awm_synth.store.records import StageRecord


def scenario_text(s: Scenario) -> str:
    return f"{s.name.replace('_', ' ')}: {s.description}"


def category_cap(config: SynthConfig) -> int:
    """Default cap: a tenth of the requested count (at least 1), so no domain dominates."""
    if config.max_per_category is not None:
        return config.max_per_category
    return max(1, math.ceil(config.count / 10))


async def run(llm: SynthLLM, config: SynthConfig, seeds: list[str] | None = None) -> StageRecord:
    stats = StageStats()
    started = time.perf_counter()
    embedder = get_embedder(config.embedder)
    selection = ScenarioSelection(scenarios=[], embedder=embedder.name, requested=config.count)
    cap = category_cap(config)
    per_category: Counter[str] = Counter()
    seen_names: set[str] = set()
    max_rounds = max(2, 2 * math.ceil(config.count / config.batch))
    for round_number in range(1, max_rounds + 1):
        if len(selection.scenarios) >= config.count:
            break
        round_seeds = seeds or seeds_for_round(round_number)
        response = await llm.ask(
            RequestKey("scenario_expand", GLOBAL_SCENARIO, round_number),
            scenario_expansion(round_seeds, selection.scenarios, config.batch),
            stats,
        )
        try:
            batch = parse_json_model(response.content, ScenarioBatch).scenarios
        except LLMOutputError:
            continue
        fresh = [s for s in batch if s.name not in seen_names]
        seen_names.update(s.name for s in fresh)
        if not fresh:
            break  # the model has nothing new to offer
        response = await llm.ask(
            RequestKey("scenario_classify", GLOBAL_SCENARIO, round_number),
            scenario_classification(fresh),
            stats,
        )
        try:
            verdicts = {
                v.name: v for v in parse_json_model(response.content, ScenarioVerdicts).verdicts
            }
        except LLMOutputError:
            verdicts = {}
        suitable = []
        for s in fresh:
            verdict = verdicts.get(s.name)
            if verdict is not None and not verdict.suitable:
                selection.rejected.append(verdict)
            else:
                suitable.append(s)
        kept, dupes = deduplicate(
            [scenario_text(s) for s in suitable],
            embedder,
            config.dedup_threshold,
            prior=[scenario_text(s) for s in selection.scenarios],
        )
        for d in dupes:
            other = (
                selection.scenarios[-1 - d.kept_index]
                if d.kept_index < 0
                else suitable[d.kept_index]
            )
            selection.duplicates.append(
                {
                    "name": suitable[d.index].name,
                    "duplicate_of": other.name,
                    "similarity": d.similarity,
                }
            )
        for i in kept:
            s = suitable[i]
            category = s.category or "uncategorised"
            if per_category[category] >= cap:
                selection.capped.append(s.name)
                continue
            if len(selection.scenarios) >= config.count:
                break
            per_category[category] += 1
            selection.scenarios.append(s)
    stats.wall_s = time.perf_counter() - started
    return StageRecord(
        stage="scenario",
        scenario=GLOBAL_SCENARIO,
        accepted=bool(selection.scenarios),
        artifact=selection.model_dump(mode="json"),
        stats=stats,
    )
