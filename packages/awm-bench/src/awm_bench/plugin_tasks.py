"""awm's own tasks as a benchmark (entry point ``awm = bench-tasks``)."""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_benchmarks(register: Register) -> None:
    """``tasks``: Pass@1 by complexity on the catalog environments."""
    from awm_bench.tasks_suite import AwmTasksBenchmark

    register("tasks", AwmTasksBenchmark())
