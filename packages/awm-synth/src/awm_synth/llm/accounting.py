"""Token, cost and time accounting per request, stage and environment.

Each LLM request leaves a :class:`CallRecord`; stage checkpoints keep the
records of their own requests, so totals survive a resumed run unchanged
(cache hits carry the usage of the request that filled the cache, flagged
``cached``). Time is split into waiting for the LLM and the pipeline's own
work (executing SQL, importing apps, replaying solutions).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Pricing(BaseModel):
    """Dollars per million tokens; zero means "not priced" (local or replay backends)."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok
        ) / 1_000_000


# Published list prices of a few common models; anything else is priced by --price-in/--price-out.
KNOWN_PRICES: dict[str, Pricing] = {
    "gpt-4o": Pricing(input_per_mtok=2.5, output_per_mtok=10.0),
    "gpt-4o-mini": Pricing(input_per_mtok=0.15, output_per_mtok=0.6),
    "gpt-4.1": Pricing(input_per_mtok=2.0, output_per_mtok=8.0),
    "gpt-4.1-mini": Pricing(input_per_mtok=0.4, output_per_mtok=1.6),
}


def pricing_for(backend_spec: str) -> Pricing:
    """The list price of ``openai:MODEL`` when known, else zero."""
    _, _, model = backend_spec.partition(":")
    return KNOWN_PRICES.get(model, Pricing())


class CallRecord(BaseModel):
    """One LLM request as the pipeline saw it."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    scenario: str
    attempt: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    cost_usd: float = 0.0


class StageStats(BaseModel):
    """What one stage cost for one scenario (or for the global scenario stage)."""

    model_config = ConfigDict(extra="forbid")

    calls: list[CallRecord] = Field(default_factory=list)
    wall_s: float = 0.0
    llm_wait_s: float = 0.0

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.calls)

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)

    @property
    def own_work_s(self) -> float:
        return max(0.0, self.wall_s - self.llm_wait_s)
