"""Environment quality (the paper's §6.1): is each task feasible, grounded and tool-complete?

For every task of an environment a judge rates, from 1 (no) to 5 (fully), the
paper's three criteria:

``task_feasibility``
    can the task be done with these tools and this data (for a refusal task:
    is refusing demonstrably right)?
``data_alignment``
    does the seeded database hold what the task refers to?
``toolset_completeness``
    do the tools cover every operation the task needs?

The judge gets grounded evidence, not just the text: every tool (name,
parameters, first line of its description), the tables related to the task
with their schema, row counts and sample rows, a lookup of each entity the task
names in the database (found where, or not found), the reference solution with
the tools it uses that do not exist, whether its replay completed, and the
environment's validation record (``awm envs validate``).

Two judges: ``checks`` (no model, the offline default) scores from that
evidence alone; :class:`LLMQualityJudge` asks any awm backend (``openai:NAME``,
``local:smollm2``, ``scripted``) and validates its JSON, sending a malformed
answer back with what was wrong, and recording the task as unjudged (never
crashing) when the model keeps failing.

Besides the ratings, environment errors seen in rollouts are counted per
environment and per tool: tool calls that failed on the environment's side
(``tool_error`` / ``environment_error`` / ``timeout`` results, HTTP 5xx), kept
apart from the agent's own faults (malformed calls, unknown tools, invalid
arguments, not-found ids). Rollouts come from a ``trajectories.jsonl``
(``awm bench tasks --out DIR``) or, by default, from replaying every reference
solution.

Modules: :mod:`.database` (the seeded data a task is checked against),
:mod:`.entities` (what a task names), :mod:`.evidence` (what the judge is shown),
:mod:`.judge` (the two judges), :mod:`.ratings` (the scale), :mod:`.env_errors`
(environment errors in rollouts), :mod:`.rollouts` (reading or replaying them),
:mod:`.report` (the whole run), :mod:`.display` and :mod:`.cli` (the command).
The names in ``__init__.pyi`` are imported on first use: the plugin loads :mod:`.cli` at every
``awm`` start, and that must not pull in pydantic models or the LLM backends.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
