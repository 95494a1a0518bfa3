"""``openai:MODEL``: any OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, ``awm serve-llm``).

Built on the official SDK's ``AsyncOpenAI`` with the SDK's own retries switched
off: awm retries itself so that the policy (which errors are transient, how
long to wait, what the final error says) is the same for every endpoint and is
visible in :class:`ChatResponse.attempts` and :class:`BackendStats`.

Configuration, first match wins: keyword arguments, then ``AWM_OPENAI_BASE_URL``
/ ``AWM_OPENAI_API_KEY`` / ``AWM_OPENAI_MODEL``, then ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` / ``OPENAI_MODEL``.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import weakref
from typing import Any

import openai

from awm_core.llm.base import (
    BackendStats,
    ChatResponse,
    LLMConfigError,
    LLMError,
    LLMRequestError,
    LLMRetriesExhaustedError,
)
from awm_core.llm.wire import completion_from_openai, message_to_openai
from awm_core.models import Message

# Statuses worth another attempt: timeouts, conflicts, rate limits, server errors.
TRANSIENT_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))


def _env(name: str) -> str | None:
    return os.environ.get(f"AWM_{name}") or os.environ.get(name) or None


class OpenAIBackend:
    """Chat completions over HTTP with retries, backoff, a concurrency limit and accounting.

    ``max_retries`` is the number of extra attempts after the first; the wait
    before retry ``k`` is ``backoff_s * 2**k`` (capped at ``max_backoff_s``, with
    up to 10% jitter so many workers do not retry in lockstep), or the server's
    ``Retry-After`` when it sends one and it is shorter than the cap.
    """

    def __init__(
        self,
        model: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        timeout_s: float = 120.0,
        max_concurrency: int = 64,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.model = model or _env("OPENAI_MODEL") or ""
        if not self.model:
            raise LLMConfigError(
                "no model name: use openai:MODEL (e.g. openai:gpt-4o-mini) or set AWM_OPENAI_MODEL"
            )
        self.base_url = base_url or _env("OPENAI_BASE_URL")
        key = api_key or _env("OPENAI_API_KEY")
        if key is None:
            if self.base_url is None:
                raise LLMConfigError(
                    "no API key for the OpenAI API: set OPENAI_API_KEY (or AWM_OPENAI_API_KEY), "
                    "or point OPENAI_BASE_URL at a local endpoint (e.g. `awm serve-llm`)"
                )
            key = (
                "EMPTY"  # local servers (vLLM, awm serve-llm) ignore the key but the SDK wants one
            )
        self._api_key = key
        self.name = f"openai:{self.model}"
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        self.max_concurrency = max_concurrency
        self.extra_body = extra_body
        self.stats = BackendStats()
        # An AsyncOpenAI client and a semaphore belong to one event loop; keep one
        # pair per loop so the backend survives being used from several asyncio.run calls.
        self._per_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[openai.AsyncOpenAI, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()

    @classmethod
    def from_spec(cls, model: str, **options: Any) -> OpenAIBackend:
        """The factory registered under ``openai``."""
        return cls(model, **options)

    def _client(self) -> tuple[openai.AsyncOpenAI, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        pair = self._per_loop.get(loop)
        if pair is None:
            client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,
            )
            pair = (client, asyncio.Semaphore(self.max_concurrency))
            self._per_loop[loop] = pair
        return pair

    def _delay(self, retry: int, error: Exception) -> float:
        delay: float = min(self.max_backoff_s, self.backoff_s * (2**retry))
        delay *= 1 + 0.1 * random.random()
        response = getattr(error, "response", None)
        if response is not None:
            header = response.headers.get("retry-after")
            try:
                if header is not None:
                    delay = min(self.max_backoff_s, max(0.0, float(header)))
            except ValueError:
                pass  # an HTTP-date; keep the exponential delay
        return delay

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
        """One completion; retries transient failures, raises a typed :class:`LLMError` otherwise."""
        client, semaphore = self._client()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m) for m in messages],
        }
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if top_p is not None:
            kwargs["top_p"] = top_p
        if seed is not None:
            kwargs["seed"] = seed
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body

        started = time.perf_counter()
        last_status: int | None = None
        last_error: Exception | None = None
        attempts = 0
        async with semaphore:
            for attempt in range(self.max_retries + 1):
                attempts = attempt + 1
                try:
                    completion = await client.chat.completions.create(**kwargs)
                except openai.APIStatusError as exc:
                    last_status, last_error = exc.status_code, exc
                    if exc.status_code not in TRANSIENT_STATUSES:
                        self.stats.failed_calls += 1
                        raise LLMRequestError(
                            f"{self.name} at {self.base_url or 'api.openai.com'} rejected the "
                            f"request with HTTP {exc.status_code}: {_message(exc)}",
                            status=exc.status_code,
                        ) from exc
                except openai.APIConnectionError as exc:  # includes timeouts
                    last_status, last_error = None, exc
                except openai.OpenAIError as exc:
                    self.stats.failed_calls += 1
                    raise LLMError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
                else:
                    response = completion_from_openai(
                        completion.model_dump(), latency_s=time.perf_counter() - started
                    )
                    response = response.model_copy(update={"attempts": attempts})
                    self.stats.record(response)
                    return response
                if attempt < self.max_retries:
                    await asyncio.sleep(self._delay(attempt, last_error))
        self.stats.failed_calls += 1
        self.stats.retries += attempts - 1
        what = f"HTTP {last_status}" if last_status else type(last_error).__name__
        raise LLMRetriesExhaustedError(
            f"{self.name} at {self.base_url or 'api.openai.com'} failed {attempts} times "
            f"(last: {what}: {_message(last_error)}); check the server is up and not overloaded, "
            "or raise max_retries",
            attempts=attempts,
            last_status=last_status,
        ) from last_error


def _message(exc: Exception | None) -> str:
    if exc is None:
        return ""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(exc)
