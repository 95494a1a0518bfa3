"""Tool interface spec: what an agent sees when it calls ``list_tools``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolSpec(BaseModel):
    """A typed tool: a name, a description and JSON Schemas for input and output.

    In an awm environment a tool is a FastAPI route whose ``operation_id`` is
    ``name``; ``method`` and ``path`` say which route serves it.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str = ""
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    output_schema: dict[str, Any] | None = None
    method: str | None = None
    path: str | None = None
    tags: list[str] = Field(default_factory=list)
