"""BFCLv3 for awm: bfcl-eval's cases in awm's episode loop and in its own harness.

Needs the ``awm-bench[bfcl]`` extra (bfcl-eval 2025.8.6.2) to load cases and score;
:mod:`awm_bench.bfcl.cases` (case model, oracle, v3 overall) does not.
"""
