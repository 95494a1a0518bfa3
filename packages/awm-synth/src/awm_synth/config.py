"""Run configuration: counts, attempt limits, tolerances and the frozen reference time."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_REFERENCE_TIME = datetime(2025, 3, 15, 9, 0, 0)


class Thresholds(BaseModel):
    """Largest tolerated share of failing units per stage (failing units are dropped, not shipped).

    The paper tolerates up to 10% failing tables and inserts and no start-up
    failure; a tool that crashes on its smoke call or a task whose proof fails
    is not tolerated by default.
    """

    model_config = ConfigDict(extra="forbid")

    tasks: float = 0.0
    tables: float = 0.1
    inserts: float = 0.1
    spec: float = 0.0
    startup: float = 0.0
    tools: float = 0.0
    verifiers: float = 0.0


class SynthConfig(BaseModel):
    """Everything that shapes a run's output; stored in ``run.json`` for resume and report."""

    model_config = ConfigDict(extra="forbid")

    backend: str = "replay"
    count: int = Field(default=1000, ge=1, description="Scenarios wanted.")
    batch: int = Field(default=10, ge=1, description="Scenarios proposed per expansion request.")
    max_per_category: int | None = None
    dedup_threshold: float = 0.85
    embedder: str = "auto"
    tasks_per_scenario: int = Field(default=10, ge=1)
    max_attempts: int = Field(default=5, ge=1)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    reference_time: datetime = DEFAULT_REFERENCE_TIME
    user_id: int = 1
    concurrency: int = Field(default=64, ge=1)
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None
