"""Stage: verifiers. Each task is proven on the real app before it ships.

For every task: its verifier must say *not complete* on the initial database
(else the task is already solved and a do-nothing agent would be rewarded),
the reference solution must replay without tool errors and then satisfy the
verifier, and the wrong solution must not.
"""

from __future__ import annotations

import ast

from pydantic import ValidationError

from awm_envs.verifiers import run_native_verifier
from awm_synth.apprunner import AppHarness, AppLoadError, import_source
from awm_synth.artifacts import (
    DatabaseSchema,
    SeedData,
    TaskSet,
    TaskSolution,
    ToolCode,
    VerifierModule,
)
from awm_synth.correction import CheckResult
from awm_synth.errors import ArtifactParseError
from awm_synth.parsing import extract_block
from awm_synth.prompts import verifiers_prompt
from awm_synth.sqlexec import build_template
from awm_synth.stages.base import ScenarioContext, StageRecord, corrected_stage

SOLUTIONS_NAME = "SOLUTIONS"


def parse_verifiers(raw: str) -> VerifierModule:
    """Split the module into verifier source and the literal ``SOLUTIONS`` table (which is removed)."""
    source = extract_block(raw, "python")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ArtifactParseError(
            f"verifiers.py has a syntax error at line {exc.lineno}: {exc.msg}"
        ) from exc
    solutions_node = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == SOLUTIONS_NAME for t in node.targets
        ):
            solutions_node = node
    if solutions_node is None:
        raise ArtifactParseError(
            f"verifiers.py must define a module-level literal {SOLUTIONS_NAME} = {{task_id: ...}}"
        )
    try:
        raw_solutions = ast.literal_eval(solutions_node.value)
        solutions = {str(k): TaskSolution.model_validate(v) for k, v in raw_solutions.items()}
    except (ValueError, SyntaxError, AttributeError, ValidationError) as exc:
        raise ArtifactParseError(
            f"{SOLUTIONS_NAME} is not a literal dict of task solutions: {exc}"
        ) from exc
    lines = source.splitlines(keepends=True)
    start, end = solutions_node.lineno - 1, solutions_node.end_lineno or solutions_node.lineno
    stripped = "".join(lines[:start] + lines[end:]).strip() + "\n"
    return VerifierModule(source=stripped, solutions=solutions)


def check_verifiers(
    module: VerifierModule,
    tasks: TaskSet,
    code: ToolCode,
    schema: DatabaseSchema,
    seed: SeedData,
) -> CheckResult:
    """Prove each task: not complete initially, complete after the reference, rejects the wrong one."""
    template = build_template(schema.sql(), seed.sql())
    try:
        verifiers = import_source(module.source, "verifiers")
    except AppLoadError as exc:
        return CheckResult.fatal_error("verifier_import_error", exc.message)
    try:
        harness = AppHarness(code.source, template).start()
    except AppLoadError as exc:  # the code stage proved it starts; this guards against drift
        return CheckResult.fatal_error(exc.cause, exc.message)
    result = CheckResult(total=len(tasks.tasks))
    module.failed_tasks = []
    try:
        for task in tasks.tasks:
            problems = _prove(task.id, module.solutions.get(task.id), verifiers, harness, template)
            if problems:
                module.failed_tasks.append(task.id)
                result.failed += 1
                for cause, message in problems:
                    result.causes.append(cause)
                    result.errors.append(f"task {task.id}: {message}")
    finally:
        harness.close()
    return result


def _prove(task_id, solution: TaskSolution | None, verifiers, harness: AppHarness, template: bytes):  # type: ignore[no-untyped-def]
    if solution is None:
        return [("missing_verifier", f"no entry in {SOLUTIONS_NAME} for this task")]
    fn = solution.verifier
    if not callable(getattr(verifiers, fn, None)):
        return [("missing_verifier", f"verifier function {fn!r} is not defined")]
    problems: list[tuple[str, str]] = []
    initial = run_native_verifier(verifiers, fn, template, template, None)
    if initial.error:
        problems.append(("verifier_error", f"{fn} on the initial database: {initial.error}"))
    elif initial.complete:
        problems.append(
            (
                "verifier_initial_complete",
                f"{fn} says complete on the unchanged initial database (evidence {initial.evidence}); "
                "the task would reward doing nothing: check the change itself, not a state that already holds",
            )
        )
    harness.reset()
    for i, step in enumerate(solution.reference_solution, start=1):
        outcome = harness.call(step.tool, step.arguments)
        if not outcome.ok:
            detail = outcome.crash or str(outcome.content)[:200]
            problems.append(
                (
                    "reference_step_failed",
                    f"reference step {i} {step.tool}({step.arguments}) failed: HTTP {outcome.status} {detail}",
                )
            )
            break
    final = harness.snapshot()
    after = run_native_verifier(verifiers, fn, template, final, solution.reference_answer)
    if after.error:
        problems.append(("verifier_error", f"{fn} after the reference solution: {after.error}"))
    elif not after.complete:
        problems.append(
            (
                "reference_not_complete",
                f"{fn} says not complete after the reference solution (evidence {after.evidence})",
            )
        )
    wrong = solution.wrong_solution
    if wrong is not None:
        harness.reset()
        for step in wrong.solution:
            harness.call(step.tool, step.arguments)
        verdict = run_native_verifier(
            verifiers, fn, template, harness.snapshot(), wrong.final_answer
        )
        if verdict.complete:
            problems.append(
                (
                    "verifier_accepts_wrong",
                    f"{fn} accepts the wrong solution ({wrong.description}); make it stricter",
                )
            )
    return problems


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    tasks: TaskSet = ctx.artifacts["tasks"]
    return await corrected_stage(
        ctx,
        "verifiers",
        verifiers_prompt(
            ctx.scenario,
            tasks.tasks,
            ctx.artifacts["schema"],
            ctx.artifacts["data"],
            ctx.artifacts["spec"],
            cfg.user_id,
            cfg.reference_time,
        ),
        parse_verifiers,
        lambda module: check_verifiers(
            module, tasks, ctx.artifacts["code"], ctx.artifacts["schema"], ctx.artifacts["data"]
        ),
        cfg.thresholds.verifiers,
    )
