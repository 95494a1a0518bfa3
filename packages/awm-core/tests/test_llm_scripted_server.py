"""The scripted OpenAI server speaks real HTTP: any OpenAI client can talk to it."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from awm_core.llm.base import ChatResponse
from awm_core.llm.scripted_server import HTTPFailure, ScriptedOpenAIServer
from awm_core.models import ToolCall

MSG = [{"role": "user", "content": "hi"}]


def client(srv: ScriptedOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0)


def test_answers_script_in_order_and_counts_requests() -> None:
    with ScriptedOpenAIServer(["first", "second"]) as srv:
        c = client(srv)
        answers = [c.chat.completions.create(model="m", messages=MSG) for _ in range(2)]
        assert [a.choices[0].message.content for a in answers] == ["first", "second"]
        assert srv.request_count == 2
        assert srv.requests[0]["messages"] == MSG


def test_serves_on_a_free_local_port_per_instance() -> None:
    with ScriptedOpenAIServer(["a"]) as one, ScriptedOpenAIServer(["b"]) as two:
        assert one.port != two.port
        assert one.base_url.startswith("http://127.0.0.1:")


def test_lists_models() -> None:
    with ScriptedOpenAIServer([], model="tiny") as srv:
        assert [m.id for m in client(srv).models.list()] == ["tiny"]


def test_injected_failures_come_first_with_their_status() -> None:
    with ScriptedOpenAIServer(["ok"], failures=[500, 429]) as srv:
        c = client(srv)
        with pytest.raises(openai.InternalServerError):
            c.chat.completions.create(model="m", messages=MSG)
        with pytest.raises(openai.RateLimitError):
            c.chat.completions.create(model="m", messages=MSG)
        assert c.chat.completions.create(model="m", messages=MSG).choices[0].message.content == "ok"
        assert srv.failures_served == 2
        assert srv.request_count == 3


def test_failure_inside_the_script() -> None:
    with ScriptedOpenAIServer([HTTPFailure(503, "busy"), "ok"]) as srv:
        c = client(srv)
        with pytest.raises(openai.InternalServerError, match="busy"):
            c.chat.completions.create(model="m", messages=MSG)
        assert c.chat.completions.create(model="m", messages=MSG).choices[0].message.content == "ok"


def test_exhausted_script_is_a_client_error_not_an_empty_answer() -> None:
    with ScriptedOpenAIServer(["only"]) as srv:
        c = client(srv)
        c.chat.completions.create(model="m", messages=MSG)
        with pytest.raises(openai.BadRequestError, match="script exhausted"):
            c.chat.completions.create(model="m", messages=MSG)


def test_callable_script_sees_the_request_body() -> None:
    def echo(body: dict) -> str:
        return body["messages"][-1]["content"].upper()

    with ScriptedOpenAIServer(echo) as srv:
        reply = client(srv).chat.completions.create(model="m", messages=MSG)
        assert reply.choices[0].message.content == "HI"


def test_native_tool_calls_and_reasoning_travel_as_openai_fields() -> None:
    scripted = ChatResponse(
        content="",
        reasoning="look first",
        tool_calls=[ToolCall(name="list_tools", arguments={"a": 1})],
    )
    with ScriptedOpenAIServer([scripted]) as srv:
        raw = httpx.post(f"{srv.base_url}/chat/completions", json={"model": "m", "messages": MSG})
        message = raw.json()["choices"][0]["message"]
        assert message["reasoning_content"] == "look first"
        assert message["tool_calls"][0]["function"] == {
            "name": "list_tools",
            "arguments": '{"a": 1}',
        }
        assert raw.json()["choices"][0]["finish_reason"] == "tool_calls"


def test_bad_request_body_is_rejected() -> None:
    with ScriptedOpenAIServer(["x"]) as srv:
        raw = httpx.post(f"{srv.base_url}/chat/completions", json={"model": "m"})
        assert raw.status_code == 400
        assert "messages" in raw.json()["error"]["message"]


def test_latency_is_injected() -> None:
    with ScriptedOpenAIServer(["slow"], latency_s=0.2) as srv:
        started = time.perf_counter()
        client(srv).chat.completions.create(model="m", messages=MSG)
        assert time.perf_counter() - started >= 0.2


def test_stops_serving_after_the_block() -> None:
    with ScriptedOpenAIServer(["x"]) as srv:
        url = srv.base_url
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models", timeout=1)
