"""A scenario: the one-line application idea every environment starts from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Scenario(BaseModel):
    """A stateful application an agent could operate through an API.

    ``name`` is a stable identifier (``online_bookstore``), ``description`` is the
    paragraph the synthesis pipeline expands into tasks and a database.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$", description="Stable identifier.")
    description: str = Field(min_length=1)
    category: str | None = Field(default=None, description="Domain used for per-category caps.")
    seed: str | None = Field(default=None, description="Seed domain it was expanded from.")
