"""AgentDojo as an awm plugin object: ``convert`` and ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_bench.agentdojo.upstream import available
from awm_core.contracts import BENCHMARK_MODES, BenchmarkConfig, require_available
from awm_core.llm.sampling import Sampling


class AgentDojoBenchmark:
    """AgentDojo (agentdojo 0.1.35, suites v1.2.2): workspace, travel, banking and slack,
    under AgentDojo's attacks, scored by its utility and security checks."""

    name = "agentdojo"
    title = "AgentDojo"
    modes = BENCHMARK_MODES
    # AgentDojo's OpenAI element asks for temperature 0 (OpenAILLM's default)
    sampling = Sampling(temperature=0.0)

    def available(self) -> str | None:
        return available()

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write ``limit`` user tasks per suite as folders: ``task.json`` (the prompt and the
        ground truth's calls on the suite's default environment) next to the suite's
        ``tools.json`` (its tools as awm tool specs)."""
        require_available(self)
        from awm_bench.agentdojo.cases import SUITES
        from awm_bench.agentdojo.episode import tool_specs
        from awm_bench.agentdojo.run import load_cases
        from awm_bench.agentdojo.upstream import attr, get_suite

        runtime_cls = attr("agentdojo.functions_runtime", "FunctionsRuntime")
        written = []
        for name in SUITES:
            suite = get_suite(name)
            specs = [s.model_dump(mode="json") for s in tool_specs(runtime_cls(suite.tools))]
            (dest / name).mkdir(parents=True, exist_ok=True)
            (dest / name / "tools.json").write_text(json.dumps(specs, indent=1), encoding="utf-8")
            for case in load_cases((name,), limit, "none"):
                task = suite.get_user_task_by_id(case.user_task)
                env = task.init_environment(suite.load_and_inject_default_environment({}))
                folder = dest / name / case.user_task
                folder.mkdir(parents=True, exist_ok=True)
                data = {
                    "suite": name,
                    "id": case.user_task,
                    "prompt": task.PROMPT,
                    "ground_truth": [
                        {"function": c.function, "args": dict(c.args)}
                        for c in task.ground_truth(env)
                    ],
                    "ground_truth_output": task.GROUND_TRUTH_OUTPUT,
                }
                (folder / "task.json").write_text(
                    json.dumps(data, indent=1, default=str), encoding="utf-8"
                )
                written.append(folder)
        return written

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        require_available(self)
        from awm_bench.agentdojo.run import (
            DEFAULT_LIMIT,
            attack_of,
            load_cases,
            run_agentdojo,
            suites_of,
        )

        attack = attack_of(config)
        limit = None if config.full else (config.limit or DEFAULT_LIMIT)
        cases = load_cases(suites_of(config.only), limit, attack)
        return run_agentdojo(config, cases, attack)
