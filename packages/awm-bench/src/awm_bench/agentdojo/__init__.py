"""AgentDojo for awm: its four suites (workspace, travel, banking, slack) in AgentDojo's
own pipeline (native) and behind awm's episode loop (awm), injected by AgentDojo's
attacks and scored by its own utility and security checks.

Needs the ``awm-bench[agentdojo]`` extra; :mod:`awm_bench.agentdojo.cases` (the oracle's
script, the metrics, the published reference numbers) does not.
"""
