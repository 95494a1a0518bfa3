"""BFCLv3 in native mode: one of bfcl-eval's own model handlers and its prompts, talking
to an OpenAI-compatible endpoint that awm serves (any awm backend, or the oracle).

By default the handler is bfcl-eval's generic OpenAI function-calling handler;
``--handler`` picks the one the leaderboard uses for a model
(:mod:`awm_bench.bfcl.handlers`), e.g. :class:`QwenFCHandler` or :class:`QwenHandler`.
Chat handlers send chat completions; bfcl's local-inference handlers apply the model's
chat template themselves and send the raw prompt to ``POST /v1/completions``, which
:func:`serve_app` adds to awm's endpoint: answered by the oracle, or passed on to the
model's own OpenAI-compatible completions endpoint (``--model openai:NAME``, e.g. a
vLLM server) with the run's sampling and response cache.

Results are what bfcl-eval writes to its result files and are scored with the same
handler's decoding, so scores are comparable with the leaderboard's for that handler.
"""

from __future__ import annotations

import copy
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from io import StringIO
from types import SimpleNamespace
from typing import Any

from awm_bench.bfcl.cases import IRRELEVANT_ANSWER, BfclCase, corrupt, oracle_calls
from awm_bench.bfcl.handlers import HandlerSetupError, HandlerSpec, check_model, default_handler
from awm_bench.bfcl.upstream import bfcl, forget_instances
from awm_core.llm.base import ChatResponse, LLMError
from awm_core.llm.cache import ResponseCache, cache_key
from awm_core.llm.sampling import Sampling
from awm_core.models import Message, TokenUsage, ToolCall

TEMPERATURE = 0.001
"""bfcl-eval's default sampling temperature for generation (its ``--temperature``)."""

ORACLE_CONTEXT_TOKENS = 32768
"""The context length the oracle's stand-in tokenizer reports to a local-inference handler."""

Calls = list[tuple[str, dict[str, Any]]]
Completer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers one ``POST /v1/completions`` body with the completion JSON."""


# --------------------------------------------------------------------------- the oracle


@dataclass
class OracleBackend:
    """An awm LLM backend that answers a BFCL case from its ground truth.

    Serve it (:func:`serve_app`) and point bfcl-eval's handler at it: the oracle then
    travels the whole native path (bfcl's prompt and tool conversion, the HTTP wire,
    bfcl's decoding and checkers). :meth:`start` sets the case being asked about.
    Each turn's calls come as one answer, then a text reply ends the turn, as a
    function-calling model would; the oracle follows the conversation by counting
    its own answers (every handler asks once more after calls, and a text reply ends
    a turn). Function-calling chat handlers get the calls as tool calls; every other
    handler gets them as text in the first format its own decoder reads back
    (:func:`calls_text`), so prompt-mode and local-inference handlers work too.
    """

    case: BfclCase | None = None
    corruption: str | None = None
    spec: HandlerSpec | None = None
    name: str = "bfcl-oracle"
    _turn: int = field(default=0, init=False, repr=False)
    _called: bool = field(default=False, init=False, repr=False)
    _decoder: Any = field(default=None, init=False, repr=False)

    def start(self, case: BfclCase) -> None:
        """Answer ``case`` from its first turn on."""
        self.case = case
        self._turn = 0
        self._called = False

    def next_answer(self) -> tuple[Calls, str]:
        """The calls to answer now (none: answer the text instead), moving the turn on."""
        if self.case is None:
            raise LLMError("the BFCL oracle was asked without a case")
        turns = corrupt(oracle_calls(self.case), self.corruption)
        calls = turns[self._turn] if self._turn < len(turns) else []
        if self._called or not calls:
            self._turn += 1
            self._called = False
            return [], IRRELEVANT_ANSWER if not calls else "Done."
        self._called = True
        return calls, ""

    @property
    def _tool_calls(self) -> bool:
        return self.spec is None or (self.spec.kind == "chat" and self.spec.is_fc_model)

    def answer(self, tools: list[dict[str, Any]] | None = None) -> ChatResponse:
        """The next answer as a chat completion (tool calls, or text)."""
        calls, text = self.next_answer()
        if not calls:
            return ChatResponse(content=text)
        if not self._tool_calls:
            return ChatResponse(content=self.text(calls))
        offered = {
            str(t.get("function", t).get("name", "")) for t in (tools or []) if isinstance(t, dict)
        }
        out = []
        for i, (name, args) in enumerate(calls):
            # OpenAI-safe, as bfcl sent it
            wire = name if name in offered else name.replace(".", "_")
            out.append(ToolCall(id=f"call_{self._turn}_{i}", name=wire, arguments=args))
        return ChatResponse(tool_calls=out, finish_reason="tool_calls")

    def text(self, calls: Calls) -> str:
        """``calls`` as text that the handler's own decoder reads back as exactly them."""
        spec = self.spec or default_handler()
        if self._decoder is None:
            self._decoder = spec.build("decoder", 0.0)
        language = self.case.language if self.case else "Python"
        return calls_text(
            calls, self._decoder, language=language, underscore_to_dot=spec.underscore_to_dot
        )

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
        return self.answer(tools)

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /v1/completions`` for a local-inference handler: calls as the model's text."""
        calls, text = self.next_answer()
        reply = self.text(calls) if calls else text
        return completion_json(
            reply,
            model=str(body.get("model", self.name)),
            prompt_tokens=len(str(body.get("prompt", "")).split()),
            completion_tokens=len(reply.split()),
        )


def _wire_name(name: str, underscore_to_dot: bool) -> str:
    # the checker expects "a_b" for "a.b" from models flagged underscore_to_dot
    return name.replace(".", "_") if underscore_to_dot else name


def _decoded(decoder: Any, text: str, language: str) -> Any:
    """What ``decoder`` (a bfcl handler) makes of a model answering ``text``; None if nothing."""
    choice = SimpleNamespace(
        text=text,
        message=SimpleNamespace(content=text, tool_calls=None, reasoning_content=None),
        finish_reason="stop",
    )
    response = SimpleNamespace(
        choices=[choice], usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0)
    )
    try:
        with redirect_stdout(StringIO()):
            parsed = decoder._parse_query_response_prompting(response)
            return decoder.decode_ast(parsed["model_responses"], language=language)
    except Exception:  # a format this handler does not read
        return None


def _hermes(calls: Calls) -> str:
    return "\n".join(
        "<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
        for n, a in calls
    )


def _python(calls: Calls, decoder: Any, language: str) -> str:
    """``[f(a=1), g(b='x')]``, each value written the way the decoder reads it back."""

    def value(name: str, key: str, v: Any) -> str:
        candidates = [repr(v)] if language == "Python" else []
        if isinstance(v, str):
            candidates.append(v)  # Java/JavaScript arguments are source text already
        candidates += [json.dumps(v), repr(v)]
        for text in candidates:
            got = _decoded(decoder, f"[{name}({key}={text})]", language)
            if got and isinstance(got[0], dict) and got[0].get(name, {}).get(key) == v:
                return text
        return repr(v)

    return (
        "["
        + ", ".join(
            f"{n}(" + ", ".join(f"{k}={value(n, k, v)}" for k, v in a.items()) + ")"
            for n, a in calls
        )
        + "]"
    )


def calls_text(
    calls: Calls, decoder: Any, *, language: str = "Python", underscore_to_dot: bool = False
) -> str:
    """``calls`` written as a model answering in text would: Hermes ``<tool_call>`` JSON
    blocks (Qwen's function-calling format), bfcl's ``[f(a=1)]`` prompt format, or a JSON
    list of ``{"name", "arguments"|"parameters"}``: the first that ``decoder`` (the run's
    bfcl handler) decodes to exactly ``calls``."""
    calls = [(_wire_name(n, underscore_to_dot), a) for n, a in calls]
    expected = [{n: a} for n, a in calls]
    candidates = (
        _hermes(calls),
        _python(calls, decoder, language),
        json.dumps([{"name": n, "arguments": a} for n, a in calls]),
        json.dumps([{"name": n, "parameters": a} for n, a in calls]),
    )
    for text in candidates:
        if _decoded(decoder, text, language) == expected:
            return text
    raise LLMError(
        f"the BFCL oracle cannot write calls that bfcl-eval's {type(decoder).__name__} "
        "decodes (it reads none of <tool_call> JSON, [f(a=1)] lists, JSON call lists)"
    )


# --------------------------------------------------------------------------- /v1/completions


def completion_json(
    text: str, *, model: str, prompt_tokens: int = 0, completion_tokens: int = 0
) -> dict[str, Any]:
    """An OpenAI text completion object holding ``text``."""
    return {
        "id": f"cmpl-{uuid.uuid4().hex[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    kind = "invalid_request_error" if status == 400 else "server_error"
    body = {"error": {"message": message, "type": kind, "code": status, "param": None}}
    return JSONResponse(body, status_code=status)


def serve_app(backend: Any, *, model_name: str, complete: Completer | None = None) -> Any:
    """awm's OpenAI-compatible app for ``backend`` (chat completions) plus
    ``POST /v1/completions`` answered by ``complete`` (a 400 when None)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    from awm_core.llm.serve import build_backend_app

    app = build_backend_app(backend, model_name=model_name)

    async def completions(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("prompt"), str):
            return _error(400, "request body needs a 'prompt' string")
        if complete is None:
            return _error(400, "this endpoint serves chat completions only")
        try:
            return JSONResponse(await complete(body))
        except LLMError as exc:
            return _error(502, str(exc))
        except Exception as exc:  # the client must see why
            return _error(500, f"{type(exc).__name__}: {exc}")

    app.add_route("/v1/completions", completions, methods=["POST"])
    return app


@dataclass
class UpstreamCompletions:
    """``/v1/completions`` passed on to a model's own OpenAI-compatible endpoint.

    ``sampling`` (the run's) replaces the handler's parameters where it sets them, as
    the run's chat backend does; each answer is kept in ``cache`` under the prompt and
    parameters, so a resumed run does not ask again.
    """

    base_url: str | None
    api_key: str
    model: str
    cache: ResponseCache
    sampling: Sampling = field(default_factory=Sampling)
    _client: Any = field(default=None, init=False, repr=False)

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        import openai

        chosen = self.sampling.request(
            temperature=body.get("temperature"),
            top_p=body.get("top_p"),
            max_tokens=body.get("max_tokens"),
            seed=body.get("seed"),
        )
        # vLLM's own fields that bfcl's local-inference handlers send
        extra = {k: body[k] for k in ("stop_token_ids", "skip_special_tokens") if k in body}
        prompt = str(body["prompt"])
        params = {"prompt": prompt, "extra": extra, **chosen.to_dict()}
        key = cache_key(f"openai:{self.model}/completions", [], params)
        cached = self.cache.get(key)
        if cached is None:
            if self._client is None:
                self._client = openai.AsyncOpenAI(base_url=self.base_url, api_key=self.api_key)
            kwargs = {k: v for k, v in chosen.to_dict().items() if v is not None}
            try:
                response = await self._client.completions.create(
                    model=self.model, prompt=prompt, extra_body=extra or None, **kwargs
                )
            except openai.OpenAIError as exc:
                raise LLMError(f"openai:{self.model} completions failed: {exc}") from exc
            usage = response.usage
            cached = ChatResponse(
                content=response.choices[0].text,
                usage=TokenUsage(
                    prompt_tokens=usage.prompt_tokens if usage else 0,
                    completion_tokens=usage.completion_tokens if usage else 0,
                ),
                finish_reason=response.choices[0].finish_reason,
                model=self.model,
            )
            self.cache.put(key, cached, meta={"prompt": prompt, "params": params})
        return completion_json(
            cached.content,
            model=self.model,
            prompt_tokens=cached.usage.prompt_tokens,
            completion_tokens=cached.usage.completion_tokens,
        )


def upstream_completions(
    spec: HandlerSpec, model: str, cache: ResponseCache, sampling: Sampling
) -> UpstreamCompletions:
    """The completions endpoint of ``openai:NAME`` (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
    as its chat backend reads them)."""
    check_model(spec, model)
    from awm_core import get_backend

    backend = get_backend(model)
    key = os.environ.get("AWM_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    return UpstreamCompletions(
        base_url=getattr(backend, "base_url", None),
        api_key=key,
        model=str(getattr(backend, "model", model.split(":", 1)[1])),
        cache=cache,
        sampling=sampling,
    )


# --------------------------------------------------------------------------- tokenizers


@dataclass(frozen=True)
class PromptTokenizer:
    """What a local-inference handler counts prompt tokens with (bfcl loads the model's
    tokenizer from the Hugging Face hub and caps the answer at the context left)."""

    tokenizer: Any
    max_context_length: int


class WordTokenizer:
    """The oracle's stand-in tokenizer: one token per whitespace-separated word."""

    def tokenize(self, text: str) -> list[str]:
        return text.split()


def oracle_tokenizer() -> PromptTokenizer:
    return PromptTokenizer(WordTokenizer(), ORACLE_CONTEXT_TOKENS)


def load_tokenizer(spec: HandlerSpec) -> PromptTokenizer:
    """The model's tokenizer as bfcl loads it (from the handler's Hugging Face model id,
    or ``$AWM_BFCL_TOKENIZER``, a local folder or another id) and its context length."""
    source = os.environ.get("AWM_BFCL_TOKENIZER") or str(
        getattr(spec.build("tokenizer", 0.0), "model_name_huggingface", "")
    )
    try:
        from transformers import AutoConfig, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source)
        config = AutoConfig.from_pretrained(source)
    except Exception as exc:
        raise HandlerSetupError(
            f"{spec.class_name} counts prompt tokens with the model's tokenizer and could not "
            f"load {source!r} ({type(exc).__name__}: {exc}); set AWM_BFCL_TOKENIZER to a local "
            "model folder or a Hugging Face id"
        ) from exc
    length = getattr(config, "max_position_embeddings", None) or tokenizer.model_max_length
    return PromptTokenizer(tokenizer, int(length))


# --------------------------------------------------------------------------- one case


def infer(
    case: BfclCase,
    *,
    base_url: str,
    model: str,
    api_key: str = "EMPTY",
    temperature: float | None = None,
    spec: HandlerSpec | None = None,
    tokenizer: PromptTokenizer | None = None,
) -> Any:
    """Run ``case`` through bfcl-eval's handler ``spec`` (default: its OpenAI FC handler)
    against ``base_url``; returns the result as bfcl-eval records it (an error text when
    inference failed, as bfcl does). ``temperature`` is the handler's (bfcl-eval's default
    when None); ``tokenizer`` is needed by local-inference handlers."""
    spec = spec or default_handler()
    openai_cls = bfcl.attr("openai", "OpenAI")
    handler = spec.build(model, TEMPERATURE if temperature is None else temperature)
    handler.client = openai_cls(base_url=base_url, api_key=api_key, max_retries=0)
    entry = copy.deepcopy(case.entry)
    try:
        with redirect_stdout(StringIO()):  # bfcl prints every step
            if spec.kind == "completions":
                if tokenizer is None:
                    raise HandlerSetupError(f"{spec.class_name} needs a tokenizer")
                # what bfcl's batch_inference sets up before it sends any prompt
                handler.model_path_or_id = model
                handler.tokenizer = tokenizer.tokenizer
                handler.max_context_length = tokenizer.max_context_length
                if case.multi_turn:
                    result, _metadata = handler.inference_multi_turn_prompting(entry, False, True)
                else:
                    result, _metadata = handler.inference_single_turn_prompting(entry, False)
            else:
                result, _metadata = handler.inference(
                    entry, include_input_log=False, exclude_state_log=True
                )
    except Exception as exc:  # recorded, as bfcl-eval's generation loop records it
        result = f"Error during inference: {exc}"
    finally:
        if case.multi_turn:
            forget_instances(handler.model_name, case.id)
    return result
