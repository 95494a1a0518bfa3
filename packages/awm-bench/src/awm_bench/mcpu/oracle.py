"""The MCP-Universe oracle in both modes: the task's expected calls, then the answer
built from their results (``$result[i]``, see :func:`awm_bench.mcpu.cases.fill_answer`).

In awm mode it is an awm policy (the calls through ``call_tool`` as
:class:`awm_core.episode.ReferencePolicy` replays them); in native mode a backend
behind awm's OpenAI-compatible endpoint, answering MCP-Universe's ``function_call``
agent with tool calls and then its closing ``{"thought", "answer"}`` JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from awm_bench.mcpu.cases import (
    ExpectedCall,
    answer_text,
    awm_tool_name,
    fill_answer,
    final_message,
)
from awm_core.episode import ReferencePolicy
from awm_core.llm.base import ChatResponse
from awm_core.models import Message, Task, ToolCall, ToolCallStep
from awm_core.toolcalls import ToolCallFormat

NO_GROUND_TRUTH = "This task has no expected calls, so the oracle has no answer."


def reference_steps(calls: list[ExpectedCall]) -> list[ToolCallStep]:
    """The expected calls as awm reference steps (awm's tool names)."""
    return [ToolCallStep(tool=awm_tool_name(c.tool), arguments=dict(c.arguments)) for c in calls]


@dataclass
class OraclePolicy:
    """awm mode: replays ``task.reference_solution``, then answers from the results the
    session collected (``results``: the text of every call, in order)."""

    task: Task
    answer: Any
    results: list[str]
    name: str = "mcpuniverse-oracle"
    _turn: int = field(default=0, init=False)
    _reference: ReferencePolicy | None = field(default=None, init=False)

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """list_tools, one call_tool per expected call, then the filled-in answer."""
        if self._reference is None:
            self._reference = ReferencePolicy(self.task)
        turn = self._turn
        self._turn += 1
        if turn <= len(self.task.reference_solution or []):
            return await self._reference.respond(messages, fmt=fmt, tools=tools)
        content = answer_text(fill_answer(self.answer, self.results))
        return fmt.assistant_response(
            None, reasoning="The expected calls are done.", content=content
        )


@dataclass
class OracleBackend:
    """Native mode: answers the function_call agent's turns for the current task.

    The k-th request after k tool-calling turns gets the k-th expected call; after the
    last one, the closing message with the answer filled in from the tool messages.
    """

    calls: list[ExpectedCall] = field(default_factory=list)
    answer: Any = NO_GROUND_TRUTH
    name: str = "mcpuniverse-oracle"

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> ChatResponse:
        """The next expected call, or the closing answer."""
        made = sum(1 for m in messages if m.role == "assistant" and m.tool_calls)
        if made < len(self.calls):
            call = self.calls[made]
            tool_call = ToolCall(id=f"call_{made}", name=call.tool, arguments=dict(call.arguments))
            return ChatResponse(tool_calls=[tool_call], finish_reason="tool_calls")
        results = [m.content for m in messages if m.role == "tool"]
        return ChatResponse(content=final_message(fill_answer(self.answer, results)))
