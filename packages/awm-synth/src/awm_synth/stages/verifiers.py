"""Stage: verifiers. Each task is proven on the real app before it ships.

For every task: its verifier must say *not complete* on the initial database
(else the task is already solved and a do-nothing agent would be rewarded),
the reference solution must replay without tool errors and then satisfy the
verifier, and the wrong solution must not.

By default (:func:`check_verifiers_sandboxed`) the app runs in the runtime's
sandbox worker and every verifier in awm-envs' verifier sandbox, the one
that judges rollouts during training; :func:`check_verifiers` is the trusted
in-process path (``--trusted``).
"""

from __future__ import annotations

import ast
import asyncio
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from awm_core.astparse import parse as parse_source
from awm_core.llm.extract import extract_block
from awm_envs.verifiers.trusted import run_trusted
from awm_synth.checks.apprunner import AppHarness, AppLoadError, import_source
from awm_synth.checks.sandbox import CheckSandbox, SandboxedApp, verifier_failure
from awm_synth.checks.sqlexec import build_template
from awm_synth.errors import ArtifactParseError
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.code import candidate_files
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import verifiers_prompt
from awm_synth.store.artifacts import (
    DatabaseSchema,
    SeedData,
    TaskSet,
    TaskSolution,
    ToolCode,
    VerifierModule,
)
from awm_synth.store.records import StageRecord

SOLUTIONS_NAME = "SOLUTIONS"


def parse_verifiers(raw: str) -> VerifierModule:
    """Split the module into verifier source and the literal ``SOLUTIONS`` table (which is removed)."""
    source = extract_block(raw, "python")
    try:
        tree = parse_source(source)
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


def _prove(
    task_id: str,
    solution: TaskSolution | None,
    verifiers: ModuleType,
    harness: AppHarness,
    template: bytes,
) -> list[tuple[str, str]]:
    if solution is None:
        return [("missing_verifier", f"no entry in {SOLUTIONS_NAME} for this task")]
    fn = solution.verifier
    if not callable(getattr(verifiers, fn, None)):
        return [("missing_verifier", f"verifier function {fn!r} is not defined")]
    problems: list[tuple[str, str]] = []
    initial = run_trusted(verifiers, fn, template, template, None)
    if initial.error:
        problems.append(
            ("verifier_error", f"{fn} on the initial database: {initial.error.message}")
        )
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
    after = run_trusted(verifiers, fn, template, final, solution.reference_answer)
    if after.error:
        problems.append(
            ("verifier_error", f"{fn} after the reference solution: {after.error.message}")
        )
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
        verdict = run_trusted(verifiers, fn, template, harness.snapshot(), wrong.final_answer)
        if verdict.complete:
            problems.append(
                (
                    "verifier_accepts_wrong",
                    f"{fn} accepts the wrong solution ({wrong.description}); make it stricter",
                )
            )
    return problems


def _defined_functions(source: str) -> set[str]:
    try:
        tree = parse_source(source)
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


Step = tuple[str, dict[str, Any]]


async def check_verifiers_sandboxed(
    sandbox: CheckSandbox,
    files: dict[str, str],
    module: VerifierModule,
    tasks: TaskSet,
) -> CheckResult:
    """:func:`check_verifiers` with the app in a sandbox worker and verifiers in the verifier sandbox."""
    async with sandbox.slot():
        folder = await asyncio.to_thread(sandbox.stage, files)
        result = CheckResult(total=len(tasks.tasks))
        module.failed_tasks = []
        located: list[tuple[int, list[Step]]] = []  # (error index, the calls up to the crash)
        try:
            async with sandbox.app(folder) as app:
                template = await app.snapshot()
                problem = await sandbox.verifier_import_error(module.source, template)
                if problem is not None:
                    return CheckResult.fatal_error(
                        "verifier_import_error", f"verifiers.py failed to import: {problem}"
                    )
                defined = _defined_functions(module.source)
                for task in tasks.tasks:
                    problems = await _prove_sandboxed(
                        module.solutions.get(task.id),
                        module.source,
                        defined,
                        sandbox,
                        app,
                        template,
                    )
                    if problems:
                        module.failed_tasks.append(task.id)
                        result.failed += 1
                        for cause, message, calls in problems:
                            if calls:
                                located.append((len(result.errors), calls))
                            result.causes.append(cause)
                            result.errors.append(f"task {task.id}: {message}")
        except AppLoadError as exc:  # the code stage proved it starts; this guards against drift
            return CheckResult.fatal_error(exc.cause, exc.message)
        if located:
            crashes = await sandbox.crash_locations(
                files["app.py"], template, [calls for _, calls in located]
            )
            for (index, _), crash in zip(located, crashes, strict=True):
                if crash:  # same shape as the in-process harness's message
                    head = result.errors[index].split(" failed: ", 1)[0]
                    result.errors[index] = f"{head} failed: HTTP 500 {crash}"
    return result


async def _prove_sandboxed(
    solution: TaskSolution | None,
    source: str,
    defined: set[str],
    sandbox: CheckSandbox,
    app: SandboxedApp,
    template: bytes,
) -> list[tuple[str, str, list[Step] | None]]:
    """:func:`_prove` through the sandboxes; each problem may carry the calls that crashed."""
    if solution is None:
        return [("missing_verifier", f"no entry in {SOLUTIONS_NAME} for this task", None)]
    fn = solution.verifier
    if fn not in defined:
        return [("missing_verifier", f"verifier function {fn!r} is not defined", None)]
    problems: list[tuple[str, str, list[Step] | None]] = []
    initial = await sandbox.verify(source, fn, template, template, None)
    failure = verifier_failure(initial, source)
    if failure:
        problems.append(("verifier_error", f"{fn} on the initial database: {failure}", None))
    elif initial.complete:
        problems.append(
            (
                "verifier_initial_complete",
                f"{fn} says complete on the unchanged initial database (evidence {initial.evidence}); "
                "the task would reward doing nothing: check the change itself, not a state that already holds",
                None,
            )
        )
    await app.reset()
    done: list[Step] = []
    for i, step in enumerate(solution.reference_solution, start=1):
        outcome = await app.call(step.tool, step.arguments)
        done.append((step.tool, dict(step.arguments)))
        if not outcome.ok:
            problems.append(
                (
                    "reference_step_failed",
                    f"reference step {i} {step.tool}({step.arguments}) failed: {outcome.message[:300]}",
                    list(done) if outcome.kind == "crash" else None,
                )
            )
            break
    final = await app.snapshot()
    after = await sandbox.verify(source, fn, template, final, solution.reference_answer)
    failure = verifier_failure(after, source)
    if failure:
        problems.append(("verifier_error", f"{fn} after the reference solution: {failure}", None))
    elif not after.complete:
        problems.append(
            (
                "reference_not_complete",
                f"{fn} says not complete after the reference solution (evidence {after.evidence})",
                None,
            )
        )
    wrong = solution.wrong_solution
    if wrong is not None:
        await app.reset()
        for step in wrong.solution:
            await app.call(step.tool, step.arguments)
        verdict = await sandbox.verify(
            source, fn, template, await app.snapshot(), wrong.final_answer
        )
        if verdict.complete:
            problems.append(
                (
                    "verifier_accepts_wrong",
                    f"{fn} accepts the wrong solution ({wrong.description}); make it stricter",
                    None,
                )
            )
    return problems


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    tasks: TaskSet = ctx.artifacts["tasks"]
    sandbox = ctx.sandbox
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
        acheck=(
            None
            if sandbox is None
            else lambda module: check_verifiers_sandboxed(
                sandbox, candidate_files(ctx, ctx.artifacts["code"]), module, tasks
            )
        ),
    )
