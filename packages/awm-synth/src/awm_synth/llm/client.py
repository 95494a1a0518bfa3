"""The pipeline's one door to an LLM: tagging, caching, a concurrency limit and accounting.

Every stage asks through :class:`SynthLLM`, never a backend directly, so that
the rules hold everywhere: at most ``concurrency`` requests in flight across
the whole run (one semaphore), a cache hit never reaches the backend, and each
request's usage and waiting time lands in the stage's :class:`StageStats`.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

from awm_core.llm.base import ChatResponse, LLMBackend
from awm_core.llm.cache import ResponseCache, cache_key
from awm_core.models import Message
from awm_synth.llm.accounting import CallRecord, Pricing, StageStats
from awm_synth.llm.tags import RequestKey


def tag_messages(key: RequestKey, messages: list[Message]) -> list[Message]:
    """Put ``key``'s tag on the first line of the last user message (see :mod:`awm_synth.llm.tags`)."""
    out = list(messages)
    for i in range(len(out) - 1, -1, -1):
        if out[i].role == "user":
            out[i] = out[i].model_copy(update={"content": f"{key.tag()}\n{out[i].content}"})
            return out
    raise ValueError("a synthesis request needs a user message to carry its tag")


class SynthLLM:
    """Ask a backend, through the cache, under a run-wide limit on requests in flight."""

    def __init__(
        self,
        backend: LLMBackend,
        *,
        cache: ResponseCache | None = None,
        concurrency: int = 64,
        pricing: Pricing | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.concurrency = concurrency
        self.pricing = pricing or Pricing()
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.requests_sent = 0
        self.in_flight = 0
        self.max_in_flight = 0
        # (monotonic time, requests in flight) at every change: benchmarks read saturation from it.
        self.timeline: list[tuple[float, int]] = []
        # A semaphore belongs to one event loop; tests and the CLI may run several loops.
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = asyncio.Semaphore(self.concurrency)
            self._semaphores[loop] = sem
        return sem

    def params(self, response_format: dict[str, Any] | None) -> dict[str, Any]:
        """The sampling parameters that are part of the cache key."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": response_format,
        }

    async def ask(
        self,
        key: RequestKey,
        messages: list[Message],
        stats: StageStats,
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResponse:
        """Answer ``messages`` (tagged with ``key``) from the cache or the backend."""
        tagged = tag_messages(key, messages)
        digest = cache_key(self.backend.name, tagged, self.params(response_format))
        if self.cache is not None:
            hit = self.cache.get(digest)
            if hit is not None:
                stats.calls.append(self._record(key, hit, cached=True))
                return hit
        started = time.perf_counter()
        async with self._semaphore():
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.requests_sent += 1
            self.timeline.append((time.monotonic(), self.in_flight))
            try:
                response = await self.backend.chat(
                    tagged,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    response_format=response_format,
                )
            finally:
                self.in_flight -= 1
                self.timeline.append((time.monotonic(), self.in_flight))
        waited = time.perf_counter() - started
        stats.llm_wait_s += waited
        if self.cache is not None:
            # fsync'ed file writes off the event loop: other requests' answers keep flowing meanwhile.
            meta = {"stage": key.stage, "scenario": key.scenario, "attempt": key.attempt}
            await asyncio.to_thread(self.cache.put, digest, response, meta=meta)
        record = self._record(key, response, cached=False)
        record.latency_s = waited
        stats.calls.append(record)
        return response

    def _record(self, key: RequestKey, response: ChatResponse, *, cached: bool) -> CallRecord:
        usage = response.usage
        return CallRecord(
            stage=key.stage,
            scenario=key.scenario,
            attempt=key.attempt,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            latency_s=response.latency_s,
            cached=cached,
            cost_usd=self.pricing.cost(usage.prompt_tokens, usage.completion_tokens),
        )
