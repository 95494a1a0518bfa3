"""A real OpenAI-protocol HTTP server that answers from a script: for tests across packages.

Every OpenAI code path (the SDK, retries, timeouts, usage accounting) can then be
tested over real HTTP on 127.0.0.1, without mocking a client::

    with ScriptedOpenAIServer(["hello", "<tool_call>...</tool_call>"], failures=[500]) as srv:
        backend = get_backend("openai:scripted", base_url=srv.base_url, api_key="x")
        ...
    assert srv.request_count == 3  # one 500, then two answers

Script items, in order, one per successful request:

* ``str``: the assistant content, sent verbatim (``<think>`` blocks included);
* :class:`ChatResponse` or a ``dict`` of its fields
  (``{"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]}``);
* a ``dict`` with ``"choices"``: a raw completion, sent unchanged;
* :class:`HTTPFailure`: answer that status (``HTTPFailure(429, "slow down")``);
* a callable taking the request body and returning any of the above.

``replies`` may also be one callable, asked for every request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from typing import Any

from awm_core.llm.base import ChatResponse
from awm_core.llm.http_server import BackgroundServer, HTTPFailure, build_openai_app
from awm_core.llm.wire import completion_to_openai
from awm_core.models import TokenUsage

Reply = str | ChatResponse | dict[str, Any] | HTTPFailure
ReplyFn = Callable[[dict[str, Any]], Reply]

__all__ = ["HTTPFailure", "Reply", "ReplyFn", "ScriptExhaustedError", "ScriptedOpenAIServer"]


class ScriptExhaustedError(HTTPFailure):
    """More requests arrived than the script has replies (answered as HTTP 400, not retried)."""


class ScriptedOpenAIServer:
    """An OpenAI-compatible endpoint on a free 127.0.0.1 port, run in a background thread.

    ``failures`` is a list of HTTP statuses answered to the first requests, in
    order, before the script starts (``[500, 429]``). ``latency_s`` delays every
    answer, failures included. ``requests`` keeps each request body received.
    """

    def __init__(
        self,
        replies: Sequence[Reply | ReplyFn] | ReplyFn,
        *,
        failures: Sequence[int] = (),
        latency_s: float = 0.0,
        model: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._replies = replies
        self._failures = list(failures)
        self.latency_s = latency_s
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.failures_served = 0
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests handled at once (tests concurrency limits)
        self._answered = 0
        self._lock = threading.Lock()
        app = build_openai_app(self._handle, models=[model])
        self._server = BackgroundServer(app, host=host, port=port)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for an OpenAI client's ``base_url``."""
        return self._server.base_url

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def request_count(self) -> int:
        """Chat-completion requests received, failed ones included."""
        return len(self.requests)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.failures_served < len(self._failures):
                status = self._failures[self.failures_served]
                self.failures_served += 1
                return HTTPFailure(
                    status, f"scripted failure {self.failures_served} (HTTP {status})"
                )
            if callable(self._replies):
                reply: Reply | ReplyFn = self._replies
            else:
                if self._answered >= len(self._replies):
                    return ScriptExhaustedError(
                        400,
                        f"scripted server: script exhausted after {len(self._replies)} replies "
                        f"(request {len(self.requests)})",
                    )
                reply = self._replies[self._answered]
            self._answered += 1
        return reply(body) if callable(reply) else reply

    async def _handle(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self._next(body)
        self.in_flight += 1  # only the server's own event loop thread touches these
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency_s:
                await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        if isinstance(reply, HTTPFailure):
            raise reply
        if isinstance(reply, dict) and "choices" in reply:
            return reply
        if isinstance(reply, str):
            response = ChatResponse(content=reply)
        elif isinstance(reply, dict):
            response = ChatResponse.model_validate(reply)
        else:
            response = reply
        if response.usage.total_tokens == 0:  # a rough count so usage accounting is testable
            prompt_chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
            response = response.model_copy(
                update={
                    "usage": TokenUsage(
                        prompt_tokens=max(1, prompt_chars // 4),
                        completion_tokens=max(1, len(response.content) // 4),
                    )
                }
            )
        return completion_to_openai(response, model=str(body.get("model") or self.model))

    def start(self) -> ScriptedOpenAIServer:
        """Start serving (the context manager calls this)."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        self._server.stop()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
