"""Stage: tasks. N concrete, post-login, API-solvable tasks per scenario, complexity-labelled."""

from __future__ import annotations

from awm_core.models import complexity_for_calls
from awm_synth.llm.parsing import parse_json_model
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import tasks_prompt
from awm_synth.store.artifacts import TaskSet
from awm_synth.store.records import StageRecord


def check_tasks(tasks: TaskSet, wanted: int) -> CheckResult:
    """Structural checks: unique ids, a plan for each task, labels that match the plan's length.

    Semantic checks (solvable, not already done) come later, once verifiers
    and tools exist and a reference solution can be replayed.
    """
    result = CheckResult(total=max(len(tasks.tasks), 1))
    if not tasks.tasks:
        result.add("no_tasks", "the answer has no tasks")
        return result
    seen: set[str] = set()
    for task in tasks.tasks:
        if task.id in seen:
            result.add("duplicate_task", f"task id {task.id!r} is used twice; ids must be unique")
        seen.add(task.id)
        expected = complexity_for_calls(len(task.solution_plan))
        if abs(_rank(expected) - _rank(task.complexity)) > 1:
            result.add(
                "complexity_label",
                f"task {task.id!r} is labelled {task.complexity} but its plan has "
                f"{len(task.solution_plan)} steps ({expected}); relabel it or fix the plan",
            )
    if len(tasks.tasks) < wanted:
        result.notes.append(f"{len(tasks.tasks)} tasks proposed, {wanted} requested")
    tasks.tasks = tasks.tasks[:wanted]
    return result


def _rank(label: str) -> int:
    return ["easy", "medium", "hard", "very_hard"].index(str(label))


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    wanted = cfg.tasks_per_scenario
    return await corrected_stage(
        ctx,
        "tasks",
        tasks_prompt(ctx.scenario, wanted, cfg.user_id, cfg.reference_time),
        lambda raw: parse_json_model(raw, TaskSet),
        lambda tasks: check_tasks(tasks, wanted),
        cfg.thresholds.tasks,
    )
