"""τ²-bench's own harness (``tau2.run.run_task``: its LLM agent, user simulator and
evaluator) with the models served by awm, and the oracle's two backends.

τ² reaches models through litellm; awm serves any backend as an OpenAI-compatible
endpoint in-process (:func:`awm_core.llm.serve.build_backend_app`) and τ² is pointed
at it (``openai/NAME`` with ``api_base``). The oracle agent and the oracle user are
backends too, so they travel the same wire as a model.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from awm_bench.tau2.cases import (
    MESSAGE_TOOL,
    GoldenAction,
    ScriptStep,
    oracle_user_turn,
)
from awm_bench.tau2.upstream import (
    attr,
    default_max_errors,
    default_max_steps,
    default_seed,
    module,
)
from awm_core.llm.base import ChatResponse, LLMError
from awm_core.models import Message, ToolCall

GREETING = "Hi! How can I help you today?"  # τ²'s DEFAULT_FIRST_AGENT_MESSAGE, checked in tests


@dataclass
class OracleAgentBackend:
    """Answers τ²'s agent turns from the oracle's script (a tool call or a message)."""

    script: list[ScriptStep] = field(default_factory=list)
    name: str = "tau2-oracle-agent"

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
        """The script's next step: one per agent message after τ²'s greeting."""
        made = [m for m in messages if m.role == "assistant" and (m.content or "") != GREETING]
        index = len(made)
        if index >= len(self.script):
            return ChatResponse(content="Goodbye.")
        step = self.script[index]
        if step.kind == "say":
            return ChatResponse(content=step.text)
        call = ToolCall(id=f"call_{index}", name=step.name, arguments=step.arguments)
        return ChatResponse(tool_calls=[call], finish_reason="tool_calls")


@dataclass
class OracleUserBackend:
    """Answers τ²'s user-simulator turns: the k-th run of user actions on the k-th request.

    The simulator sends the conversation with roles flipped: the agent's messages as
    ``user``, its own as ``assistant``, its tools' results as ``tool``.
    """

    groups: list[list[GoldenAction]] = field(default_factory=list)
    name: str = "tau2-oracle-user"
    _ids: Any = field(default_factory=itertools.count)

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
        agent_messages = sum(1 for m in messages if m.role == "user")
        last_tool = bool(messages) and messages[-1].role == "tool"
        turn = oracle_user_turn(agent_messages, last_tool, self.groups)
        if turn.calls:
            calls = [
                ToolCall(id=f"user_call_{next(self._ids)}", name=a.name, arguments=a.arguments)
                for a in turn.calls
            ]
            return ChatResponse(tool_calls=calls, finish_reason="tool_calls")
        if not turn.text:
            raise LLMError("the τ² oracle user has nothing to say")
        return ChatResponse(content=turn.text)


def litellm_target(base_url: str, served: str) -> tuple[str, dict[str, Any]]:
    """``(model, llm_args)`` that make τ²'s litellm calls reach awm's endpoint."""
    return f"openai/{served}", {"api_base": base_url, "api_key": "EMPTY", "temperature": 0.0}


def run_task_native(
    domain: str,
    task: Any,
    *,
    agent_llm: str,
    agent_args: dict[str, Any],
    user_llm: str,
    user_args: dict[str, Any],
    max_steps: int | None = None,
) -> tuple[float, dict[str, Any], Any]:
    """τ²'s ``run_task`` with its LLM agent and user simulator; ``(reward, info, simulation)``.

    ``max_steps`` is τ²'s step limit, its own default (``DEFAULT_MAX_STEPS``) when None;
    the error limit and the seed are τ²'s defaults too."""
    from awm_bench.tau2.episode import describe

    run_task = attr("tau2.run", "run_task")
    evaluator = module("tau2.evaluator.evaluator")
    simulation = run_task(
        domain=domain,
        task=task,
        agent="llm_agent",
        user="user_simulator",
        llm_agent=agent_llm,
        llm_args_agent=agent_args,
        llm_user=user_llm,
        llm_args_user=user_args,
        max_steps=max_steps or default_max_steps(),
        max_errors=default_max_errors(),
        evaluation_type=evaluator.EvaluationType.ALL,
        seed=default_seed(),
    )
    reward, info = describe(simulation)
    return reward, info, simulation


__all__ = [
    "GREETING",
    "MESSAGE_TOOL",
    "OracleAgentBackend",
    "OracleUserBackend",
    "litellm_target",
    "run_task_native",
]
