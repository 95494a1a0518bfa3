"""MCP-Universe in awm mode: the task's servers behind list_tools/call_tool, rolled out
by awm's episode loop, scored by the task's own evaluators.

The driver (in mcpuniverse's venv) opens the task: runs its ``prepare``, starts its
servers through MCP-Universe's own agent and clients, and lists their tools
(``{server}__{tool}``). :class:`McpuSession` exposes them to
:func:`awm_verify.rollout_episode`; each ``call_tool`` is the agent's ``call_tool``
in the driver, so a stateful server keeps its state for the whole episode. The judge
hands the episode's final answer to ``Task.evaluate`` (then ``Task.reset`` and
cleanup) and reports MCP-Universe's verdicts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from awm_bench.mcpu.cases import McpuTask, awm_tool_name, task_success
from awm_bench.mcpu.upstream import Driver
from awm_core.contracts import JudgeRequest
from awm_core.episode import ActingPolicy, EpisodeSettings, StepChecks
from awm_core.models import Complexity, Task, ToolResult, ToolSpec, Verdict, VerdictLabel
from awm_verify import rollout_episode

# MCP-Universe decides: wrong names and arguments reach its servers (which answer with
# an error, as they do for its own agent), and an agent may answer without a call.
MCPU_SETTINGS = EpisodeSettings(checks=StepChecks.external())


class McpuSession:
    """One opened MCP-Universe task as an awm :class:`awm_core.session.EnvInstance` (no database)."""

    def __init__(self, driver: Driver, task: McpuTask, tools: list[dict[str, Any]]) -> None:
        self.driver = driver
        self.env_id = f"mcpuniverse/{task.id}"
        self.names = {awm_tool_name(t["name"]): str(t["name"]) for t in tools}
        self.specs = [
            ToolSpec(
                name=awm_tool_name(t["name"]),
                description=str(t.get("description") or ""),
                input_schema=t.get("input_schema") or {"type": "object"},
            )
            for t in tools
        ]
        self.results: list[str] = []
        """Every call's result text, in order (the oracle builds its answer from them)."""
        self.calls: list[dict[str, Any]] = []

    async def list_tools(self) -> list[ToolSpec]:
        return list(self.specs)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        started = time.perf_counter()
        upstream = self.names.get(name, name)
        answer = await self.driver.request("call", name=upstream, arguments=arguments)
        text = str(answer["text"])
        error = bool(answer.get("is_error"))
        self.results.append(text)
        self.calls.append({"tool": upstream, "arguments": arguments, "error": error})
        return ToolResult(
            content=text,
            is_error=error,
            error_type="tool_error" if error else None,
            latency_s=time.perf_counter() - started,
        )

    async def snapshot(self) -> None:
        """None: the task's state lives in its MCP servers, not in a database."""
        return None


@dataclass
class McpuJudge:
    """Scores the final answer with the task's own evaluators (``Task.evaluate``)."""

    driver: Driver
    name: str = "mcpuniverse"
    results: list[dict[str, Any]] | None = None

    async def judge(self, request: JudgeRequest) -> Verdict:
        answer = request.trajectory.final_answer or ""
        self.results = list((await self.driver.request("evaluate", answer=answer))["results"])
        ok = task_success(self.results)
        passed = sum(bool(r["passed"]) for r in self.results)
        return Verdict(
            label=VerdictLabel.COMPLETED if ok else VerdictLabel.PARTIALLY_COMPLETED,
            reasoning=f"MCP-Universe evaluators: {passed}/{len(self.results)} passed",
            judge=self.name,
            evidence={"evaluations": self.results},
        )


@dataclass
class McpuRun:
    """One task run in awm mode: MCP-Universe's evaluations and the episode."""

    results: list[dict[str, Any]]
    answer: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    termination: str = ""
    error: str | None = None


async def run_task_awm(
    driver: Driver,
    task: McpuTask,
    policy_for: Callable[[Task, McpuSession], ActingPolicy],
    *,
    settings: EpisodeSettings = MCPU_SETTINGS,
) -> McpuRun:
    """Open ``task`` in the driver and roll it out with awm's rollout function."""
    opened = await driver.request(
        "open", task=str(task.path), agent=task.agent, servers=list(task.servers)
    )
    session = McpuSession(driver, task, list(opened["tools"]))
    awm_task = Task(
        id=task.id.replace("/", "_"),
        instruction=str(opened["instruction"]),
        complexity=Complexity.MEDIUM,
        tags=["mcpuniverse", task.domain],
    )
    judge = McpuJudge(driver)
    done = await rollout_episode(
        session,
        awm_task,
        policy_for(awm_task, session),
        env_id=session.env_id,
        initial=None,
        judge=judge,
        settings=settings,
    )
    return McpuRun(
        results=judge.results or [],
        answer=done.trajectory.final_answer or "",
        calls=session.calls,
        termination=done.trajectory.termination.value,
        error=done.judge_error,
    )
