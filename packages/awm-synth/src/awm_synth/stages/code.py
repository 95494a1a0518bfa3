"""Stage: tool code. The app is imported, started, listed, and every tool is smoke-called.

Start-up must succeed (0% tolerance): an app that does not import or start is
useless. Each tool the spec names is then called once with the spec's example
arguments on a fresh copy of the seed database; an answer of 4xx is fine (the
tool explained a refusal), a crash or a 5xx is not, and neither is rejecting
the spec's own example as invalid arguments.

By default the app runs in the awm-envs runtime's sandbox worker
(:func:`check_code_sandboxed`): a hang, a crash of the process or a runaway
allocation is a failed check with a message, not a stalled run.
:func:`check_code` is the in-process harness, kept for ``--trusted`` runs.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from awm_core.llm.extract import extract_block
from awm_synth.checks.apprunner import AppHarness, AppLoadError
from awm_synth.checks.sandbox import CallOutcome, CheckSandbox
from awm_synth.checks.sqlexec import build_template
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import code_prompt
from awm_synth.store.artifacts import (
    DatabaseSchema,
    SeedData,
    ToolCode,
    ToolInterface,
    ToolInterfaceSpec,
)
from awm_synth.store.records import StageRecord

_WALL_CLOCK = re.compile(r"\b(?:datetime\.(?:now|utcnow|today)|date\.today|time\.time)\s*\(")


def parse_code(raw: str) -> ToolCode:
    return ToolCode(source=extract_block(raw, "python"))


def _example_args(tool: ToolInterface) -> dict[str, Any]:
    return {p.name: p.example for p in tool.params if p.example is not None}


def _wall_clock_reads(source: str, result: CheckResult) -> None:
    for line_no, line in enumerate(source.splitlines(), start=1):
        if _WALL_CLOCK.search(line) and not line.lstrip().startswith("#"):
            result.add(
                "wall_clock",
                f"app.py line {line_no} reads the wall clock ({line.strip()[:80]}); use REFERENCE_TIME",
            )


def check_code(
    code: ToolCode, spec: ToolInterfaceSpec, schema: DatabaseSchema, seed: SeedData
) -> CheckResult:
    """Import + start + list_tools (fatal on failure), then one smoke call per spec tool."""
    template = build_template(schema.sql(), seed.sql())
    try:
        harness = AppHarness(code.source, template)
        harness.start()
    except AppLoadError as exc:
        return CheckResult.fatal_error(exc.cause, exc.message)
    result = CheckResult(total=len(spec.tools))
    try:
        code.tools = sorted(harness.routes)
        _wall_clock_reads(code.source, result)
        for tool in spec.tools:
            if tool.name not in harness.routes:
                result.add(
                    "missing_tool",
                    f"tool {tool.name!r} from the spec has no route with operation_id={tool.name!r}",
                )
                continue
            args = _example_args(tool)
            harness.reset()
            outcome = harness.call(tool.name, args)
            if outcome.crash is not None:
                result.add("tool_500", f"{tool.name}({args}) crashed: {outcome.crash}")
            elif outcome.status >= 500:
                result.add(
                    "tool_500",
                    f"{tool.name}({args}) answered HTTP {outcome.status}: {str(outcome.content)[:200]}",
                )
            elif outcome.status == 422:
                result.add(
                    "tool_rejects_example",
                    f"{tool.name}({args}) rejected the spec's example arguments: {str(outcome.content)[:200]}",
                )
    finally:
        harness.close()
    return result


def candidate_files(ctx: ScenarioContext, code: ToolCode) -> dict[str, str]:
    """The files the runtime needs to host the candidate app: manifest, schema, seed, app."""
    from awm_synth.store.bundle import manifest_json

    return {
        "manifest.json": manifest_json(ctx.scenario, ctx.config),
        "schema.sql": ctx.artifacts["schema"].sql(),
        "seed.sql": ctx.artifacts["data"].sql(),
        "app.py": code.source,
    }


# Failure kinds of a sandboxed call (see CallOutcome) -> the report's cause and the verb used.
_SMOKE_CAUSES = {
    "crash": ("tool_500", "crashed: "),
    "server_error": ("tool_500", "answered with a server error: "),
    "invalid_arguments": ("tool_rejects_example", "rejected the spec's example arguments: "),
    "timeout": ("tool_timeout", ""),
    "worker_died": ("tool_crash", ""),
    "memory": ("tool_memory", ""),
}


def smoke_failure(tool: str, args: dict[str, Any], outcome: CallOutcome) -> tuple[str, str] | None:
    """``(cause, message)`` for a smoke call that must be repaired; None when it passed or refused."""
    if outcome.kind is None or outcome.kind == "client":
        return None
    cause, verb = _SMOKE_CAUSES.get(outcome.kind, ("tool_500", "failed: "))
    return cause, f"{tool}({args}) {verb}{outcome.message[:300]}"


async def check_code_sandboxed(
    sandbox: CheckSandbox, files: dict[str, str], code: ToolCode, spec: ToolInterfaceSpec
) -> CheckResult:
    """:func:`check_code`, with the app hosted by the runtime in a sandboxed worker process."""
    limits = sandbox.limits
    async with sandbox.slot():
        folder = await asyncio.to_thread(sandbox.stage, files)
        result = CheckResult(total=len(spec.tools))
        crashed: list[tuple[int, str, dict[str, Any]]] = []
        try:
            async with sandbox.app(folder) as app:
                code.tools = sorted(app.tool_names)
                _wall_clock_reads(code.source, result)
                deadline = asyncio.get_running_loop().time() + limits.check_s
                for tool in spec.tools:
                    if tool.name not in app.tool_names:
                        result.add(
                            "missing_tool",
                            f"tool {tool.name!r} from the spec has no route with operation_id={tool.name!r}",
                        )
                        continue
                    args = _example_args(tool)
                    if asyncio.get_running_loop().time() > deadline:
                        result.add(
                            "check_timeout",
                            f"{tool.name}({args}) was not called: the check's {limits.check_s:g} s "
                            "budget ran out on earlier calls that hung",
                        )
                        continue
                    await app.reset()
                    outcome = await app.call(tool.name, args)
                    failure = smoke_failure(tool.name, args, outcome)
                    if failure is not None:
                        if outcome.kind == "crash":
                            crashed.append((len(result.errors), tool.name, args))
                        result.add(*failure)
        except AppLoadError as exc:
            return CheckResult.fatal_error(exc.cause, exc.message)
        if crashed:  # name the line of app.py, as the in-process harness's traceback did
            template = await asyncio.to_thread(
                build_template, files["schema.sql"], files["seed.sql"]
            )
            located = await sandbox.crash_locations(
                code.source, template, [[(tool, args)] for _, tool, args in crashed]
            )
            for (index, name, args), crash in zip(crashed, located, strict=True):
                if crash:
                    result.errors[index] = f"{name}({args}) crashed: {crash}"
    return result


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    schema: DatabaseSchema = ctx.artifacts["schema"]
    seed: SeedData = ctx.artifacts["data"]
    spec: ToolInterfaceSpec = ctx.artifacts["spec"]
    sandbox = ctx.sandbox
    return await corrected_stage(
        ctx,
        "code",
        code_prompt(ctx.scenario, schema, spec, cfg.user_id, cfg.reference_time),
        parse_code,
        lambda code: check_code(code, spec, schema, seed),
        max(cfg.thresholds.tools, cfg.thresholds.startup),
        acheck=(
            None
            if sandbox is None
            else lambda code: check_code_sandboxed(sandbox, candidate_files(ctx, code), code, spec)
        ),
    )
