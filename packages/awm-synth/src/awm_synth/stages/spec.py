"""Stage: tool interface spec. Typed params and responses, only what the tasks need."""

from __future__ import annotations

import re

from awm_synth.llm.parsing import parse_json_model
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.stages.prompts import spec_prompt
from awm_synth.store.artifacts import DatabaseSchema, TaskSet, ToolInterfaceSpec
from awm_synth.store.records import StageRecord

_PATH_PARAM = re.compile(r"{(\w+)}")


def check_spec(spec: ToolInterfaceSpec, schema: DatabaseSchema, tasks: TaskSet) -> CheckResult:
    """Names unique, path parameters declared, tables real, every task served by some tool."""
    result = CheckResult(total=max(len(spec.tools), 1))
    if not spec.tools:
        result.add("no_tools", "the spec defines no tools")
        return result
    tables = {t.name for t in schema.tables}
    seen: set[str] = set()
    routes: set[tuple[str, str]] = set()
    for tool in spec.tools:
        problems: list[str] = []
        if tool.name in seen:
            problems.append(f"tool name {tool.name!r} is used twice")
        seen.add(tool.name)
        if (tool.method, tool.path) in routes:
            problems.append(f"{tool.method} {tool.path} is served by two tools")
        routes.add((tool.method, tool.path))
        declared = {p.name for p in tool.params if p.location == "path"}
        in_path = set(_PATH_PARAM.findall(tool.path))
        if declared != in_path:
            problems.append(
                f"path parameters of {tool.path} are {sorted(in_path)} but params declare {sorted(declared)}"
            )
        unknown = [t for t in tool.tables if t not in tables]
        if unknown:
            problems.append(f"touches unknown tables {unknown}; tables: {sorted(tables)}")
        if problems:
            result.add("spec_error", f"tool {tool.name}: " + "; ".join(problems))
    served = {t for tool in spec.tools for t in tool.tasks}
    missing = [t.id for t in tasks.tasks if t.id not in served]
    if missing:
        result.notes.append(f"tasks no tool names as served: {missing}")
    return result


async def run(ctx: ScenarioContext) -> StageRecord:
    cfg = ctx.config
    tasks: TaskSet = ctx.artifacts["tasks"]
    schema: DatabaseSchema = ctx.artifacts["schema"]
    return await corrected_stage(
        ctx,
        "spec",
        spec_prompt(ctx.scenario, tasks.tasks, schema, cfg.user_id, cfg.reference_time),
        lambda raw: parse_json_model(raw, ToolInterfaceSpec),
        lambda spec: check_spec(spec, schema, tasks),
        cfg.thresholds.spec,
    )
