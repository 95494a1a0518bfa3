"""Stage: tool code. The app is imported, started, listed, and every tool is smoke-called.

Start-up must succeed (0% tolerance): an app that does not import or start is
useless. Each tool the spec names is then called once with the spec's example
arguments on a fresh copy of the seed database; an answer of 4xx is fine (the
tool explained a refusal), a crash or a 5xx is not, and neither is rejecting
the spec's own example as invalid arguments.
"""

from __future__ import annotations

import re

from awm_synth.apprunner import AppHarness, AppLoadError
from awm_synth.artifacts import DatabaseSchema, SeedData, ToolCode, ToolInterfaceSpec
from awm_synth.correction import CheckResult
from awm_synth.parsing import extract_block
from awm_synth.prompts import code_prompt
from awm_synth.sqlexec import build_template
from awm_synth.stages.base import ScenarioContext, StageRecord, corrected_stage

_WALL_CLOCK = re.compile(r"\b(?:datetime\.(?:now|utcnow|today)|date\.today|time\.time)\s*\(")


def parse_code(raw: str) -> ToolCode:
    return ToolCode(source=extract_block(raw, "python"))


def _example_args(tool: object) -> dict[str, object]:
    return {p.name: p.example for p in tool.params if p.example is not None}  # type: ignore[attr-defined]


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
        for line_no, line in enumerate(code.source.splitlines(), start=1):
            if _WALL_CLOCK.search(line) and not line.lstrip().startswith("#"):
                result.add(
                    "wall_clock",
                    f"app.py line {line_no} reads the wall clock ({line.strip()[:80]}); use REFERENCE_TIME",
                )
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


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    schema: DatabaseSchema = ctx.artifacts["schema"]
    seed: SeedData = ctx.artifacts["data"]
    spec: ToolInterfaceSpec = ctx.artifacts["spec"]
    return await corrected_stage(
        ctx,
        "code",
        code_prompt(ctx.scenario, schema, spec, cfg.user_id, cfg.reference_time),
        parse_code,
        lambda code: check_code(code, spec, schema, seed),
        max(cfg.thresholds.tools, cfg.thresholds.startup),
    )
