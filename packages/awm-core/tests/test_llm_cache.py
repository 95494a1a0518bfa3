"""The one LLM response cache: content-addressed files, and the caching backend built on it."""

from __future__ import annotations

from pathlib import Path

from awm_core.llm.cache import CachingBackend, ResponseCache
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Message

MSGS = [Message(role="user", content="hello")]


async def test_a_repeated_request_is_answered_from_the_cache(tmp_path: Path) -> None:
    backend = ScriptedBackend(["answer"])  # one reply only: a second request would fail
    for _ in range(2):
        cached = CachingBackend(backend, ResponseCache(tmp_path))
        assert (await cached.chat(MSGS, temperature=0.0)).content == "answer"
    assert len(backend.calls) == 1
    assert cached.cache.hits == 1


async def test_sampling_parameters_and_tools_are_part_of_the_key(tmp_path: Path) -> None:
    backend = ScriptedBackend(["a", "b", "c"])
    cached = CachingBackend(backend, ResponseCache(tmp_path))
    await cached.chat(MSGS, temperature=0.0)
    await cached.chat(MSGS, temperature=1.0)
    await cached.chat(MSGS, temperature=0.0, tools=[{"type": "function"}])
    assert len(backend.calls) == 3 and len(cached.cache) == 3


async def test_each_entry_records_the_request(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    await CachingBackend(ScriptedBackend(["answer"]), cache).chat(MSGS)
    (entry,) = tmp_path.glob("*/*.json")
    assert '"content": "hello"' in entry.read_text()
