"""The openai: backend, against a real HTTP server on 127.0.0.1 (no mocked client)."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from awm_core import get_backend
from awm_core.llm import (
    LLMConfigError,
    LLMError,
    LLMOutputError,
    LLMRequestError,
    LLMRetriesExhaustedError,
)
from awm_core.llm.base import ChatResponse
from awm_core.llm.openai_backend import OpenAIBackend
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.llm.structured import chat_structured
from awm_core.models import Message, TokenUsage, ToolCall

USER = [Message(role="user", content="hello there")]


def backend(srv: ScriptedOpenAIServer, **options: object) -> OpenAIBackend:
    options.setdefault("backoff_s", 0.01)
    return OpenAIBackend("m", base_url=srv.base_url, api_key="test", **options)  # type: ignore[arg-type]


async def test_is_registered_under_openai() -> None:
    with ScriptedOpenAIServer(["hi"]) as srv:
        b = get_backend("openai:tiny", base_url=srv.base_url, api_key="k")
        assert b.name == "openai:tiny"
        assert (await b.chat(USER)).content == "hi"
        assert srv.requests[0]["model"] == "tiny"


async def test_retries_transient_failures_then_succeeds() -> None:
    with ScriptedOpenAIServer(["finally"], failures=[500, 429, 503]) as srv:
        b = backend(srv, max_retries=3)
        response = await b.chat(USER)
    assert response.content == "finally"
    assert response.attempts == 4
    assert srv.request_count == 4
    assert b.stats.retries == 3


async def test_backoff_grows_exponentially() -> None:
    with ScriptedOpenAIServer(["ok"], failures=[500, 500]) as srv:
        b = backend(srv, backoff_s=0.1, max_retries=2)
        started = time.perf_counter()
        await b.chat(USER)
        elapsed = time.perf_counter() - started
    assert elapsed >= 0.1 + 0.2  # waits of backoff_s * 2**0 and * 2**1


async def test_typed_error_after_the_last_retry() -> None:
    with ScriptedOpenAIServer(["never reached"], failures=[500] * 5) as srv:
        b = backend(srv, max_retries=2)
        with pytest.raises(LLMRetriesExhaustedError, match="failed 3 times") as info:
            await b.chat(USER)
    assert info.value.attempts == 3
    assert info.value.last_status == 500
    assert srv.request_count == 3
    assert b.stats.failed_calls == 1


async def test_client_errors_are_not_retried() -> None:
    with ScriptedOpenAIServer(["only one"]) as srv:
        b = backend(srv, max_retries=3)
        await b.chat(USER)
        with pytest.raises(LLMRequestError, match="HTTP 400.*script exhausted") as info:
            await b.chat(USER)
    assert info.value.status == 400
    assert srv.request_count == 2


async def test_connection_errors_are_retried_then_typed() -> None:
    with ScriptedOpenAIServer([]) as srv:
        url = srv.base_url
    b = OpenAIBackend("m", base_url=url, api_key="k", max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMRetriesExhaustedError, match="APIConnectionError"):
        await b.chat(USER)


async def test_usage_and_latency_per_call_and_accumulated() -> None:
    replies = [
        ChatResponse(content="a", usage=TokenUsage(prompt_tokens=10, completion_tokens=2)),
        ChatResponse(content="b", usage=TokenUsage(prompt_tokens=20, completion_tokens=3)),
    ]
    with ScriptedOpenAIServer(replies, latency_s=0.05) as srv:
        b = backend(srv)
        first = await b.chat(USER)
        await b.chat(USER)
    assert first.usage == TokenUsage(prompt_tokens=10, completion_tokens=2)
    assert first.latency_s >= 0.05
    assert b.stats.calls == 2
    assert b.stats.usage == TokenUsage(prompt_tokens=30, completion_tokens=5)
    assert b.stats.latency_s >= 0.1


async def test_think_block_is_separated_into_reasoning() -> None:
    with ScriptedOpenAIServer(["<think>plan it</think>\nThe answer."]) as srv:
        response = await backend(srv).chat(USER)
    assert response.reasoning == "plan it"
    assert response.content == "The answer."


async def test_reasoning_content_field_is_reasoning() -> None:
    with ScriptedOpenAIServer([ChatResponse(content="done", reasoning="server split it")]) as srv:
        response = await backend(srv).chat(USER)
    assert (response.reasoning, response.content) == ("server split it", "done")


async def test_native_tool_calls_are_parsed() -> None:
    call = ToolCall(name="call_tool", arguments={"tool_name": "get_note", "arguments": {"id": 1}})
    with ScriptedOpenAIServer([ChatResponse(tool_calls=[call])]) as srv:
        tools = [{"type": "function", "function": {"name": "call_tool", "parameters": {}}}]
        response = await backend(srv).chat(USER, tools=tools)
        assert srv.requests[0]["tools"] == tools
    assert response.tool_calls[0].name == "call_tool"
    assert response.tool_calls[0].arguments == call.arguments
    assert response.finish_reason == "tool_calls"


async def test_sampling_settings_and_history_are_sent() -> None:
    history = [
        Message(role="system", content="sys"),
        Message(role="user", content="u"),
        Message(role="assistant", tool_calls=[ToolCall(id="c1", name="list_tools")]),
        Message(role="tool", content="[]", tool_call_id="c1"),
    ]
    with ScriptedOpenAIServer(["ok"]) as srv:
        await backend(srv).chat(history, temperature=0.3, max_tokens=7)
        body = srv.requests[0]
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 7
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][3]["tool_call_id"] == "c1"


async def test_concurrency_limit_holds() -> None:
    with ScriptedOpenAIServer(["x"] * 6, latency_s=0.1) as srv:
        b = backend(srv, max_concurrency=2)
        await asyncio.gather(*(b.chat(USER) for _ in range(6)))
    assert srv.max_in_flight == 2


class Verdict(BaseModel):
    label: str
    score: float


async def test_structured_output_is_requested_and_validated() -> None:
    with ScriptedOpenAIServer(
        ['```json\n{"label": "ok", "score": 0.5}\n```', '{"label": 3}']
    ) as srv:
        b = backend(srv)
        verdict = await chat_structured(b, USER, Verdict)
        assert verdict == Verdict(label="ok", score=0.5)
        assert srv.requests[0]["response_format"]["type"] == "json_schema"
        with pytest.raises(LLMOutputError, match="does not match Verdict"):
            await chat_structured(b, USER, Verdict)


def test_configuration_from_awm_prefixed_env_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("AWM_OPENAI_BASE_URL", "http://127.0.0.1:2/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    b = OpenAIBackend("m")
    assert b.base_url == "http://127.0.0.1:2/v1"
    assert OpenAIBackend("m", base_url="http://x/v1").base_url == "http://x/v1"


def test_missing_model_or_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "AWM_OPENAI_API_KEY", "OPENAI_BASE_URL", "AWM_OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("AWM_OPENAI_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(LLMConfigError, match="no model name"):
        OpenAIBackend("")
    with pytest.raises(LLMConfigError, match="OPENAI_API_KEY"):
        OpenAIBackend("gpt")
    assert isinstance(LLMConfigError("x"), LLMError)


def test_backend_survives_several_event_loops() -> None:
    with ScriptedOpenAIServer(["one", "two"]) as srv:
        b = backend(srv)
        assert asyncio.run(b.chat(USER)).content == "one"
        assert asyncio.run(b.chat(USER)).content == "two"
