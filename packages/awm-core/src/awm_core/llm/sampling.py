"""Sampling settings: what a model is asked to decode with, owned in one place.

A benchmark declares its own defaults (τ²-bench samples at temperature 0 with
seed 300, BFCLv3 at 0.001, MCP-Universe at 1.0 with up to 10,000 completion
tokens); ``awm bench run --temperature/--top-p/--max-tokens/--seed`` override
them field by field (:meth:`Sampling.override`). A benchmark run's backend
(:class:`awm_core.llm.cache.CachingBackend`) applies the result to every request,
whatever the harness in front of it asked for, so one object decides how a run
decodes.

Trial ``n`` of a task samples with seed ``seed + n`` (:meth:`Sampling.for_trial`):
trials of one task differ when the temperature is above zero, and the same trial
with the same seed asks the same thing, so it can be reproduced.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters; ``None`` leaves a parameter to the request or the backend."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    def override(self, other: Sampling) -> Sampling:
        """These settings with every parameter ``other`` sets (not None) replaced by it."""
        changes = {f.name: getattr(other, f.name) for f in fields(other)}
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def for_trial(self, trial: int) -> Sampling:
        """The settings of trial ``trial`` (0-based): the seed moves on by the trial index."""
        if trial < 0:
            raise ValueError(f"trial must be >= 0, got {trial}")
        return self if self.seed is None else replace(self, seed=self.seed + trial)

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON (for a run's summary and report)."""
        return asdict(self)

    def request(
        self,
        *,
        temperature: float | None = None,
        top_p: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> Sampling:
        """What a request asking for these parameters decodes with: these settings where
        set, the request's own elsewhere."""
        return Sampling(temperature, top_p, max_tokens, seed).override(self)


def sampling_kwargs(sampling: Sampling) -> dict[str, Any]:
    """``chat`` keyword arguments for ``sampling``: temperature and max_tokens always,
    top_p and seed only when set (a backend written before they existed still works)."""
    out: dict[str, Any] = {"temperature": sampling.temperature, "max_tokens": sampling.max_tokens}
    if sampling.top_p is not None:
        out["top_p"] = sampling.top_p
    if sampling.seed is not None:
        out["seed"] = sampling.seed
    return out
