"""Rebuild an episode's final database by replaying its tool calls on a fresh instance.

A trajectory file records tool calls and results but not the database. Since
every awm tool is deterministic given the database, and a failed call changes
nothing (the runtime rolls it back), replaying the calls that succeeded, in
order, on a fresh instance reproduces the final state. Each replayed call is
checked: one that succeeded in the episode but fails on replay is reported as
a divergence, so a stale trajectory or an edited environment is noticed
instead of silently verified.

Calls are unwrapped from the ``call_tool(tool_name, arguments)`` meta-tool;
``list_tools`` is skipped; a direct call of an environment tool is used as is.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_core.models import ToolCall, Trajectory

LIST_TOOLS = "list_tools"
CALL_TOOL = "call_tool"


class ReplayReport(BaseModel):
    """What a replay did: how many calls ran and where it diverged from the episode."""

    model_config = ConfigDict(extra="forbid")

    replayed: int = 0
    skipped_failed: int = 0
    divergences: list[str] = Field(default_factory=list)


def unwrap_call(call: ToolCall) -> ToolCall | None:
    """The environment tool a recorded call stands for; None for ``list_tools``."""
    if call.name == LIST_TOOLS:
        return None
    if call.name != CALL_TOOL:
        return call
    args: Any = call.arguments.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            args = {"__unparseable__": args}
    if not isinstance(args, dict):
        args = {"__not_an_object__": args}
    return ToolCall(id=call.id, name=str(call.arguments.get("tool_name", "")), arguments=args)


def successful_calls(trajectory: Trajectory) -> tuple[list[ToolCall], int]:
    """Environment calls that succeeded in the episode, and how many failed ones were left out."""
    calls: list[ToolCall] = []
    failed = 0
    if trajectory.steps:
        for step in trajectory.steps:
            if step.tool_call is None:
                continue
            inner = unwrap_call(step.tool_call)
            if inner is None:
                continue
            if step.result is None or step.result.is_error:
                failed += 1
                continue
            calls.append(inner)
        return calls, failed
    # No step records: pair each assistant call with the tool message that answered it.
    pending: dict[str | None, ToolCall] = {}
    for msg in trajectory.messages:
        if msg.role == "assistant":
            for tc in msg.tool_calls:
                pending[tc.id] = tc
        elif msg.role == "tool":
            answered = pending.pop(msg.tool_call_id, None)
            if answered is None and pending:
                answered = pending.pop(next(iter(pending)))
            inner = unwrap_call(answered) if answered else None
            if inner is not None:
                calls.append(inner)
    return calls, failed


def replay_trajectory(env: Any, trajectory: Trajectory) -> tuple[bytes, ReplayReport]:
    """Replay on a fresh instance of ``env`` (an ``awm_envs`` Environment); return the final image."""
    calls, failed = successful_calls(trajectory)
    report = ReplayReport(skipped_failed=failed)
    inst = env.instance()
    try:
        for i, call in enumerate(calls, 1):
            result = inst.call_tool_sync(call.name, call.arguments)
            report.replayed += 1
            if result.is_error:
                report.divergences.append(
                    f"call {i} {call.name} succeeded in the episode but failed on replay: "
                    f"{str(result.content)[:200]}"
                )
        return inst.snapshot_sync(), report
    finally:
        inst.close_sync()
