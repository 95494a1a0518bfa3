"""Every model request and answer of a benchmark run, saved: a caching backend.

A benchmark run wraps its backend in :class:`CachingBackend`; each answer is appended
to a JSONL file keyed by a hash of the request, so a killed run that is started
again gets its answered requests back from the file instead of asking the model
again, and the file is the record of what the model was asked and said.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core.llm.base import ChatResponse, LLMBackend
from awm_core.models import Message


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file that a run appends to, skipping a line cut short
    when the run was killed (nothing if the file does not exist yet)."""
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


def rows_by(path: Path, key: str) -> dict[str, dict[str, Any]]:
    """Rows already written, by ``row[key]``: a killed run resumes after them."""
    return {str(row[key]): row for row in read_rows(path) if key in row}


def request_key(
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    temperature: float | None,
    max_tokens: int | None,
    response_format: dict[str, Any] | None,
    model: str,
) -> str:
    """A stable hash of everything that decides a deterministic model's answer."""
    body = {
        "model": model,
        "messages": [m.model_dump(mode="json", exclude_none=True) for m in messages],
        "tools": tools,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "response_format": response_format,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class CachingBackend:
    """``backend`` with its answers kept in ``path`` (JSONL: key, request, response)."""

    backend: LLMBackend
    path: Path
    name: str = ""  # the wrapped backend's (answers are keyed by it)
    hits: int = 0
    misses: int = 0
    _answers: dict[str, ChatResponse] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.name = self.name or self.backend.name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for row in read_rows(self.path):
            try:
                self._answers[row["key"]] = ChatResponse.model_validate(row["response"])
            except (ValueError, KeyError):
                continue  # not an answer this cache wrote

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResponse:
        """The saved answer to this exact request, or the backend's (then saved)."""
        key = request_key(messages, tools, temperature, max_tokens, response_format, self.name)
        with self._lock:
            cached = self._answers.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        response = await self.backend.chat(
            messages,
            tools=tools,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format,
        )
        self.misses += 1
        row = {
            "key": key,
            "request": [m.model_dump(mode="json", exclude_none=True) for m in messages],
            "response": response.model_dump(mode="json"),
        }
        with self._lock:
            self._answers[key] = response
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row, default=str) + "\n")
        return response
