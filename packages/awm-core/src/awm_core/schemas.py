"""Versioned JSON Schemas exported from the boundary models (``awm schema NAME``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from awm_core.errors import SchemaNotFoundError
from awm_core.models import (
    EnvironmentManifest,
    Message,
    Reward,
    Scenario,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
    Verdict,
)

SCHEMA_VERSION = 1

MODELS: dict[str, type[BaseModel]] = {
    "scenario": Scenario,
    "task": Task,
    "tool-spec": ToolSpec,
    "manifest": EnvironmentManifest,
    "message": Message,
    "tool-call": ToolCall,
    "trajectory": Trajectory,
    "verdict": Verdict,
    "reward": Reward,
}


def schema_names() -> list[str]:
    return sorted(MODELS)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of model ``name``, tagged with an id and version."""
    try:
        model = MODELS[name]
    except KeyError:
        raise SchemaNotFoundError(name, list(MODELS)) from None
    schema = model.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:awm:schema:{name}:v{SCHEMA_VERSION}",
        "x-awm-schema-version": SCHEMA_VERSION,
        **schema,
    }
