"""MCP-Universe in awm mode: the task's servers behind list_tools/call_tool, rolled out
by awm's episode loop, scored by the task's own evaluators.

The driver (in mcpuniverse's venv) opens the task: runs its ``prepare``, starts its
servers through MCP-Universe's own agent and clients, lists their tools
(``{server}__{tool}``) and records the ``function_call`` agent's own first request.
The episode's task instruction is that request's one message, MCP-Universe's prompt
verbatim (role, question, output format, step budget, final-answer format).
:class:`McpuSession` exposes the tools to :func:`awm_verify.rollout_episode`; each
``call_tool`` is the agent's ``call_tool`` in the driver, so a stateful server keeps its
state for the whole episode. The judge hands the episode's final message to the driver,
which reads it as the agent reads its own (the ``answer`` of its closing JSON) and
scores it with ``Task.evaluate`` (then ``Task.reset`` and cleanup).

:data:`AWM_MODE_ADAPTATIONS` lists every way what the model sees differs from the
native run (``tests_mcpu/test_mcpu_prompt.py`` checks each against the requests
MCP-Universe's own agent sends).
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
from awm_core.history import DEFAULT_WINDOW
from awm_core.models import Complexity, Task, ToolResult, ToolSpec, Verdict, VerdictLabel
from awm_verify import rollout_episode

# MCP-Universe decides: wrong names and arguments reach its servers (which answer with
# an error, as they do for its own agent), and an agent may answer without a call.
MCPU_SETTINGS = EpisodeSettings(checks=StepChecks.external())

AWM_MODE_ADAPTATIONS: dict[str, str] = {
    "system_prompt": "a system message comes first: awm's episode system prompt "
    "(awm_core.episode.DEFAULT_SYSTEM_PROMPT) and the episode format's description of "
    "list_tools/call_tool; the function_call agent sends no system message. MCP-Universe's "
    "own prompt follows, verbatim, as the first user message in both modes",
    "tools_behind_list_tools": "the servers' tools, with MCP-Universe's descriptions and "
    "input schemas unchanged and in its order, are the result of list_tools (one extra "
    "model turn) instead of the request's tools; calls go through call_tool in the "
    "episode format's text tool calls instead of OpenAI function calling",
    "tool_names": "a tool is {server}__{tool} in both modes, with every character that is "
    "not a letter, digit or _ made _ (google-maps__maps_geocode is "
    "google_maps__maps_geocode): awm's tool names are identifiers",
    "step_reminders": "the function_call agent adds a user message 'You have N steps "
    "remaining. Please continue.' before each request after the first; awm's loop adds "
    "none, and its step limit is the agent's max_iterations plus the list_tools turn",
    "history_window": f"the model sees awm's history window (the prompt, the list_tools "
    f"turn and the last {DEFAULT_WINDOW} turns, awm_core.history); the function_call agent "
    "sends the whole history",
    "final_answer": "the first reply without a call ends the episode and is read as the "
    "agent reads its own: the answer of its closing {thought, answer} JSON, any other "
    "text as it is; the function_call agent would take a reply without an answer field as "
    "a thought and continue",
    "sampling": "the same temperature, top_p, seed and token cap (max_tokens for "
    "MCP-Universe's max_completion_tokens); MCP-Universe's OpenAI LLM also sends "
    "frequency_penalty and presence_penalty (0) and parallel_tool_calls",
}
"""Every difference between the model's requests in awm mode and in MCP-Universe's
native run (its ``function_call`` agent), each checked by ``tests_mcpu/test_mcpu_prompt.py``
and listed in docs/bench.md."""


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
    answer: str | None = None
    """The answer the evaluators scored (the agent's reading of the final message)."""

    async def judge(self, request: JudgeRequest) -> Verdict:
        evaluated = await self.driver.request(
            "evaluate", answer=request.trajectory.final_answer or ""
        )
        self.results = list(evaluated["results"])
        self.answer = evaluated.get("answer")
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
    agent: dict[str, Any] | None = None,
) -> McpuRun:
    """Open ``task`` in the driver and roll it out with awm's rollout function.

    ``agent``: the function_call agent's config (default the benchmark's, ``task.agent``);
    its ``max_iterations`` is the step budget MCP-Universe's prompt states."""
    opened = await driver.request(
        "open",
        task=str(task.path),
        agent=task.agent if agent is None else agent,
        servers=list(task.servers),
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
        answer=judge.answer if judge.answer is not None else done.trajectory.final_answer or "",
        calls=session.calls,
        termination=done.trajectory.termination.value,
        error=done.judge_error,
    )
