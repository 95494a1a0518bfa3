"""The AgentDojo plugin (entry point ``awm = bench-agentdojo``), registered like a third
party's; nothing of agentdojo is imported here."""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_benchmarks(register: Register) -> None:
    """``agentdojo``: AgentDojo 0.1.35's four suites (the ``awm-bench[agentdojo]`` extra)."""
    from awm_bench.agentdojo.converter import AgentDojoBenchmark

    register("agentdojo", AgentDojoBenchmark())
