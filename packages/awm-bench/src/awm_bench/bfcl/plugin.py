"""The BFCLv3 plugin (entry point ``awm = bench-bfcl``), registered like a third party's.

Registered whether or not bfcl-eval is installed, so ``awm bench list`` shows it with
the line that installs it; nothing of bfcl-eval is imported here.
"""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_benchmarks(register: Register) -> None:
    """``bfcl``: BFCLv3 on bfcl-eval 2025.8.6.2 (the ``awm-bench[bfcl]`` extra)."""
    from awm_bench.bfcl.converter import BfclBenchmark

    register("bfcl", BfclBenchmark())
