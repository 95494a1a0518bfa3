"""The content-addressed LLM response cache."""

from __future__ import annotations

import asyncio
from pathlib import Path

from awm_core.llm.base import ChatResponse
from awm_core.llm.cache import ResponseCache, cache_key
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Message, TokenUsage
from awm_synth.llm.accounting import StageStats
from awm_synth.llm.client import SynthLLM
from awm_synth.llm.tags import RequestKey

MSGS = [Message(role="system", content="s"), Message(role="user", content="hello")]


def test_key_depends_on_backend_messages_and_params() -> None:
    base = cache_key("openai:a", MSGS, {"temperature": 1.0})
    assert base == cache_key("openai:a", list(MSGS), {"temperature": 1.0})
    assert base != cache_key("openai:b", MSGS, {"temperature": 1.0})
    assert base != cache_key("openai:a", MSGS, {"temperature": 0.0})
    assert base != cache_key(
        "openai:a", [*MSGS[:1], Message(role="user", content="hello!")], {"temperature": 1.0}
    )


def test_round_trip_and_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    response = ChatResponse(content="x", usage=TokenUsage(prompt_tokens=3, completion_tokens=4))
    assert cache.get("ab" * 32) is None
    cache.put("ab" * 32, response)
    assert cache.get("ab" * 32) == response
    assert (cache.hits, cache.misses) == (1, 1)


def test_corrupt_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    path = tmp_path / "cd" / f"{'cd' * 32}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"response": {"content": ')  # a torn write from some other tool
    assert cache.get("cd" * 32) is None


def test_a_rerun_sends_no_request(tmp_path: Path) -> None:
    backend = ScriptedBackend(["answer"])  # one reply only: a second request would fail
    for _ in range(2):
        llm = SynthLLM(backend, cache=ResponseCache(tmp_path))
        stats = StageStats()
        response = asyncio.run(llm.ask(RequestKey("tasks", "demo", 1), MSGS, stats))
        assert response.content == "answer"
    assert len(backend.calls) == 1
    assert stats.calls[0].cached and stats.calls[0].prompt_tokens > 0  # usage survives a cache hit
