"""The MCP-Universe plugin (entry point ``awm = bench-mcpu``), registered like a third
party's; nothing of mcpuniverse is imported here (it lives in its own venv)."""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_benchmarks(register: Register) -> None:
    """``mcpuniverse``: MCP-Universe on mcpuniverse 1.1.3 (driven in its own venv)."""
    from awm_bench.mcpu.converter import McpuBenchmark

    register("mcpuniverse", McpuBenchmark())
