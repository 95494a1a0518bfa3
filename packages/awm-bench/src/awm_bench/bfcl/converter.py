"""The BFCLv3 benchmark as an awm plugin object: ``convert`` and ``run``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_bench.bfcl.cases import CATEGORIES, oracle_task
from awm_bench.bfcl.native import TEMPERATURE
from awm_bench.bfcl.upstream import available
from awm_core.contracts import BENCHMARK_MODES, BenchmarkConfig, require_available
from awm_core.errors import UnknownSubsetError
from awm_core.llm.sampling import Sampling


class BfclBenchmark:
    """BFCLv3 (bfcl-eval 2025.8.6.2): all 17 v3 categories, scored by bfcl-eval."""

    name = "bfcl"
    title = "BFCLv3"
    modes = BENCHMARK_MODES
    sampling = Sampling(temperature=TEMPERATURE)  # bfcl-eval's generation default

    def available(self) -> str | None:
        """None when bfcl-eval 2025.8.6.2 is importable; else the install line."""
        return available()

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Write ``limit`` cases per category (all with None) as case folders:
        ``case.json`` (the BFCL entry and its ground truth), ``tools.json`` (awm tool
        specs, per turn for multi-turn) and ``tasks.json`` (one awm task per turn, the
        oracle's calls as the reference solution). The tools run in
        :class:`awm_bench.bfcl.episode.BfclSession`, not in an ``app.py``."""
        require_available(self)
        import asyncio

        from awm_bench.bfcl.data import load_cases
        from awm_bench.bfcl.episode import BfclSession

        written = []
        for case in load_cases(CATEGORIES, per_category=limit):
            folder = dest / case.id
            folder.mkdir(parents=True, exist_ok=True)
            session = BfclSession(case)
            tools: list[list[dict[str, Any]]] = []
            for turn in range(len(case.turns)):
                session.turn = turn
                specs = asyncio.run(session.list_tools())
                tools.append([s.model_dump(mode="json", exclude_none=True) for s in specs])
            tasks = [
                oracle_task(case, t).model_dump(mode="json", exclude_none=True)
                for t in range(len(case.turns))
            ]
            entry = {"entry": case.entry, "ground_truth": case.ground_truth}
            (folder / "case.json").write_text(json.dumps(entry, indent=1), encoding="utf-8")
            (folder / "tools.json").write_text(json.dumps(tools, indent=1), encoding="utf-8")
            (folder / "tasks.json").write_text(json.dumps(tasks, indent=1), encoding="utf-8")
            written.append(folder)
        return written

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        """Run the default subset (``config.limit`` per category) or everything."""
        require_available(self)
        from awm_bench.bfcl.data import load_cases
        from awm_bench.bfcl.run import DEFAULT_LIMIT, run_bfcl

        per_category = None if config.full else (config.limit or DEFAULT_LIMIT)
        unknown = [c for c in config.only if c not in CATEGORIES]
        if unknown:
            raise UnknownSubsetError(
                f"not BFCLv3 categories: {unknown} (one of {', '.join(CATEGORIES)})"
            )
        categories = [c for c in CATEGORIES if not config.only or c in config.only]
        return run_bfcl(config, load_cases(categories, per_category=per_category))
