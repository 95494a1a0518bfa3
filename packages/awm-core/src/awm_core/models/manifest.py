"""The manifest at the root of every environment bundle."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class CreatedWith(BaseModel):
    """Provenance: which tool (and model, for synthesized bundles) wrote the bundle."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="'handwritten', 'awm-synth', 'awm-import' ...")
    version: str = ""
    model: str | None = None


class EnvironmentManifest(BaseModel):
    """Identity and fixed facts of an environment.

    ``reference_time`` is the environment's frozen "now": seed data is written
    relative to it and tools report it, so nothing drifts with the wall clock.
    """

    model_config = ConfigDict(extra="forbid")

    format_version: int = 1
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    category: str = Field(min_length=1)
    version: str = "0.1.0"
    created_with: CreatedWith = Field(default_factory=lambda: CreatedWith(tool="handwritten"))
    reference_time: datetime
    user_id: int | None = Field(default=1, description="The logged-in user every task acts as.")
