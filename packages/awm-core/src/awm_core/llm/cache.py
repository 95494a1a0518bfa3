"""A content-addressed cache of LLM responses: a rerun costs nothing.

The key is the sha256 of everything that determines an answer (backend name,
model, messages, sampling parameters, tools, response format, and for a
benchmark run the trial index); the value is the
:class:`ChatResponse` as JSON under ``<root>/<key[:2]>/<key>.json``. Entries
are written atomically right after the response arrives, so a run killed at
any point loses at most the requests that were still in flight, and a run
started again gets every answered request back without asking the model.

Synthesis asks through :class:`ResponseCache` directly (its keys carry the
request tags); a benchmark run wraps its backend in :class:`CachingBackend`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from awm_core.atomic import atomic_write_json
from awm_core.llm.base import ChatResponse, LLMBackend
from awm_core.llm.sampling import Sampling, sampling_kwargs
from awm_core.models import Message


def cache_key(
    backend: str,
    messages: list[Message],
    params: dict[str, Any] | None = None,
) -> str:
    """sha256 over a canonical JSON of the backend spec, messages and parameters."""
    payload = {
        "backend": backend,
        "messages": [m.model_dump(mode="json", exclude_none=True) for m in messages],
        "params": params or {},
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """LLM responses on disk, keyed by :func:`cache_key`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResponse | None:
        """The stored response, or None (a corrupt entry counts as a miss and is rewritten later)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            response = ChatResponse.model_validate(data["response"])
        except (OSError, ValueError, KeyError, ValidationError):
            self.misses += 1
            return None
        self.hits += 1
        return response

    def put(self, key: str, response: ChatResponse, *, meta: dict[str, Any] | None = None) -> None:
        """Store ``response`` under ``key`` (atomic; last writer wins, both wrote the same thing)."""
        atomic_write_json(
            self._path(key),
            {"key": key, "meta": meta or {}, "response": response.model_dump(mode="json")},
        )

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.exists() else 0


@dataclass
class CachingBackend:
    """``backend`` with its answers kept in ``cache``: an exact repeat of a request asks nothing.

    ``sampling`` (a benchmark's defaults with the run's overrides) replaces the
    request's own parameters where it sets them, so every request of a run decodes
    alike whatever harness sent it. ``trial`` is part of every key and moves the
    seed on (:meth:`Sampling.for_trial`): a run sets it before each trial, so the
    k trials of pass^k are k runs, not one answer read back k-1 times.

    Each entry's ``meta`` holds the request's messages, so the cache folder is
    also the record of what the model was asked and said.
    """

    backend: LLMBackend
    cache: ResponseCache
    name: str = ""  # the wrapped backend's (answers are keyed by it)
    sampling: Sampling = field(default_factory=Sampling)
    trial: int = 0

    def __post_init__(self) -> None:
        self.name = self.name or self.backend.name

    def key(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
    ) -> str:
        """The cache key of one request of this trial, decoded with ``sampling``."""
        params: dict[str, Any] = {
            "tools": tools,
            "response_format": response_format,
            "trial": self.trial,
            **(sampling or Sampling()).to_dict(),
        }
        return cache_key(self.name, messages, params)

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
        """The saved answer to this exact request in this trial, or the backend's (then saved)."""
        chosen = self.sampling.for_trial(self.trial).request(
            temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed
        )
        key = self.key(messages, tools=tools, response_format=response_format, sampling=chosen)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        response = await self.backend.chat(
            messages, tools=tools, response_format=response_format, **sampling_kwargs(chosen)
        )
        meta = {
            "trial": self.trial,
            "sampling": chosen.to_dict(),
            "request": [m.model_dump(mode="json", exclude_none=True) for m in messages],
        }
        # fsync'ed file writes off the event loop: other requests' answers keep flowing meanwhile.
        await asyncio.to_thread(self.cache.put, key, response, meta=meta)
        return response
