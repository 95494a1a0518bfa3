"""MCP-Universe as an awm plugin object: ``convert`` and ``run``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from awm_core.contracts import BENCHMARK_MODES, BenchmarkConfig, require_available
from awm_core.llm.sampling import Sampling


class McpuBenchmark:
    """MCP-Universe (mcpuniverse 1.1.3): its tasks, servers and evaluators; SR and AE."""

    name = "mcpuniverse"
    title = "MCP-Universe"
    modes = BENCHMARK_MODES
    # MCP-Universe's OpenAI LLM defaults (mcpuniverse.llm.openai.OpenAIConfig)
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=10_000, seed=12345)

    def available(self) -> str | None:
        from awm_bench.mcpu.upstream import available

        return available()

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write ``limit`` offline tasks per domain as folders: ``task.json``
        (MCP-Universe's task file), ``agent.json`` (the benchmark's agent config and
        servers), ``oracle.json`` (the expected calls and the answer built from them).
        Needs no mcpuniverse: the tools are only known once its servers run."""
        from awm_bench.mcpu.cases import DOMAINS, load_offline, select

        written = []
        for task in select(load_offline(DOMAINS), (), limit):
            folder = dest / task.id
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(task.path, folder / "task.json")
            agent = {**task.agent, "servers": list(task.servers)}
            (folder / "agent.json").write_text(json.dumps(agent, indent=1), encoding="utf-8")
            if task.oracle is not None:
                oracle = {
                    "calls": [c.__dict__ for c in task.oracle.calls],
                    "answer": task.oracle.answer,
                }
                (folder / "oracle.json").write_text(json.dumps(oracle, indent=1), encoding="utf-8")
            written.append(folder)
        return written

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        require_available(self)
        from awm_bench.mcpu.run import load_tasks, run_mcpu

        return run_mcpu(config, load_tasks(config))
