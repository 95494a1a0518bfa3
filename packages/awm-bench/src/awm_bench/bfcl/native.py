"""BFCLv3 in native mode: bfcl-eval's own OpenAI function-calling handler and prompts,
talking to an OpenAI-compatible endpoint that awm serves (any awm backend, or the oracle).

Results are what bfcl-eval writes to its result files, so scores are comparable with
published function-calling (FC) numbers.
"""

from __future__ import annotations

import copy
from contextlib import redirect_stdout
from dataclasses import dataclass
from io import StringIO
from typing import Any

from awm_bench.bfcl.cases import IRRELEVANT_ANSWER, BfclCase, corrupt, oracle_calls
from awm_bench.bfcl.upstream import bfcl, forget_instances
from awm_core.llm.base import ChatResponse, LLMError
from awm_core.models import Message, ToolCall

TEMPERATURE = 0.001
"""bfcl-eval's default sampling temperature for generation (its ``--temperature``)."""


@dataclass
class OracleBackend:
    """An awm LLM backend that answers a BFCL case from its ground truth.

    Serve it with :func:`awm_core.llm.serve.build_backend_app` and point bfcl-eval's
    handler at it: the oracle then travels the whole native path (bfcl's tool
    conversion, the HTTP wire, bfcl's decoding and checkers). ``case`` is the case
    being asked about; a turn's calls come back as parallel tool calls, then a text
    reply ends the turn, as a function-calling model would.
    """

    case: BfclCase | None = None
    corruption: str | None = None
    name: str = "bfcl-oracle"

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
        """The ground-truth calls of the current turn, or a text reply once they were made."""
        if self.case is None:
            raise LLMError("the BFCL oracle was asked without a case")
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        turn = max(len(users) - 1, 0) if self.case.multi_turn else 0
        answered = any(m.role == "assistant" for m in messages[users[-1] + 1 :]) if users else False
        calls = corrupt(oracle_calls(self.case), self.corruption)[turn]
        if answered or not calls:
            return ChatResponse(content=IRRELEVANT_ANSWER if not calls else "Done.")
        offered = {
            str(t.get("function", t).get("name", "")) for t in (tools or []) if isinstance(t, dict)
        }
        out = []
        for i, (name, args) in enumerate(calls):
            wire = (
                name if name in offered else name.replace(".", "_")
            )  # OpenAI-safe, as bfcl sent it
            out.append(ToolCall(id=f"call_{turn}_{i}", name=wire, arguments=args))
        return ChatResponse(tool_calls=out, finish_reason="tool_calls")


def infer(
    case: BfclCase,
    *,
    base_url: str,
    model: str,
    api_key: str = "EMPTY",
    temperature: float | None = None,
) -> Any:
    """Run ``case`` through bfcl-eval's OpenAI FC handler against ``base_url``; returns the
    result as bfcl-eval records it (an error text when inference failed, as bfcl does).
    ``temperature`` is the handler's (bfcl-eval's default when None)."""
    handler_cls = bfcl.attr(
        "bfcl_eval.model_handler.api_inference.openai_completion", "OpenAICompletionsHandler"
    )
    openai_cls = bfcl.attr("openai", "OpenAI")
    handler = handler_cls(
        f"{model}-FC", temperature=TEMPERATURE if temperature is None else temperature
    )
    handler.is_fc_model = True
    handler.client = openai_cls(base_url=base_url, api_key=api_key, max_retries=0)
    try:
        with redirect_stdout(StringIO()):  # bfcl prints every step
            result, _metadata = handler.inference(
                copy.deepcopy(case.entry), include_input_log=False, exclude_state_log=True
            )
    except Exception as exc:  # recorded, as bfcl-eval's generation loop records it
        result = f"Error during inference: {exc}"
    finally:
        if case.multi_turn:
            forget_instances(handler.model_name, case.id)
    return result
