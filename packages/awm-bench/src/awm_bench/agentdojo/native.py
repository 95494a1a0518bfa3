"""AgentDojo's own agent pipeline with the model served by awm, and the oracle's backend.

AgentDojo's default pipeline (``AgentPipeline.from_config`` with no defense: its system
message, the user's prompt, its OpenAI LLM element and ``ToolsExecutionLoop``) is built
around an ``OpenAILLM`` whose client points at awm's OpenAI-compatible endpoint
(:func:`awm_core.llm.serve.build_backend_app` in a
:class:`~awm_core.llm.http_server.BackgroundServer`), so any awm backend, the oracle
included, answers AgentDojo's requests over the same wire a hosted model would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from awm_bench.agentdojo.cases import OracleScript
from awm_bench.agentdojo.upstream import attr, default_system_message
from awm_core.llm.base import ChatResponse
from awm_core.models import Message, ToolCall

AGENTDOJO_MAX_ITERS = 15
"""``ToolsExecutionLoop``'s default: AgentDojo's agent gets 1 + 15 model turns."""


def default_max_turns() -> int:
    """AgentDojo's own budget in model turns: the first request plus its loop's 15."""
    return 1 + AGENTDOJO_MAX_ITERS


def seen_texts(messages: list[Message]) -> list[str]:
    """What an agent has read so far besides its instructions: every message after the
    system prompt and the user's request (tool results, the list of tools)."""
    body = [m for m in messages if m.role != "system"]
    return [str(m.content or "") for m in body[1:]]


@dataclass
class OracleBackend:
    """Answers AgentDojo's LLM requests from the case's :class:`OracleScript`.

    Stateless: the calls made so far are the assistant messages with tool calls in the
    request, and what the agent has seen are the tool results in it.
    """

    script: OracleScript = field(default_factory=OracleScript)
    name: str = "agentdojo-oracle"

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
        """The script's next calls, all of the current phase in one turn (AgentDojo's agent
        has 16 turns, not 16 calls: travel's user_task_19 needs 18 calls), or its answer."""
        made = sum(len(m.tool_calls or []) for m in messages if m.role == "assistant")
        seen = seen_texts(messages)
        batch = self.script.batch(made, seen)
        if not batch:
            return ChatResponse(content=self.script.step(made, seen).answer, finish_reason="stop")
        calls = [
            ToolCall(id=f"call_{made + i}", name=c.function, arguments=c.args)
            for i, c in enumerate(batch)
        ]
        return ChatResponse(tool_calls=calls, finish_reason="tool_calls")


def native_pipeline(base_url: str, served: str, *, name: str, max_turns: int | None = None) -> Any:
    """AgentDojo's default pipeline (no defense) for the model ``served`` at ``base_url``.

    ``max_turns``: model turns, AgentDojo's own 16 when None (the first request, then
    ``ToolsExecutionLoop``'s ``max_iters``)."""
    import openai

    pipeline_mod = "agentdojo.agent_pipeline.agent_pipeline"
    client = openai.OpenAI(base_url=base_url, api_key="EMPTY")
    llm = attr("agentdojo.agent_pipeline.llms.openai_llm", "OpenAILLM")(client, served)
    config = attr(pipeline_mod, "PipelineConfig")(
        llm=llm,
        model_id=None,
        defense=None,
        system_message_name=None,
        system_message=default_system_message(),
    )
    pipeline = attr(pipeline_mod, "AgentPipeline").from_config(config)
    loop_cls = attr("agentdojo.agent_pipeline.tool_execution", "ToolsExecutionLoop")
    turns = default_max_turns() if max_turns is None else max_turns
    for element in pipeline.elements:
        if isinstance(element, loop_cls):
            element.max_iters = max(turns - 1, 0)
    pipeline.name = name
    return pipeline
