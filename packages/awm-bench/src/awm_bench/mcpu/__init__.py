"""MCP-Universe for awm: mcpuniverse 1.1.3's tasks, servers and evaluators, in its own
harness (native) and in awm's episode loop (awm).

mcpuniverse runs in a venv of its own (its pins conflict with awm's mcp 2.x), driven
through :mod:`awm_bench.mcpu.driver`; :mod:`awm_bench.mcpu.cases` (task files, the
oracle, scores) needs neither.
"""
