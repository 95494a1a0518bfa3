"""Check tool arguments against the tool's input schema before anything runs.

The MCP SDK does not validate arguments, and FastAPI's own messages talk about
``body``/``query`` locations an agent never sees; this answers in the agent's
terms (argument names, expected types, the valid choices).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from awm_core.models import ToolSpec

_MAX_SHOWN = 5


def make_validator(spec: ToolSpec) -> Draft202012Validator:
    """A compiled validator for one tool's input schema."""
    return Draft202012Validator(spec.input_schema)


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def signature(spec: ToolSpec) -> str:
    """``name(a: integer, b?: string)``: the shape of a call, for error messages."""
    props = spec.input_schema.get("properties", {})
    required = set(spec.input_schema.get("required", []))
    parts = []
    for key, schema in props.items():
        kind = (
            schema.get("type")
            or "|".join(s.get("type", "?") for s in schema.get("anyOf", []) if isinstance(s, dict))
            or "any"
        )
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return f"{spec.name}({', '.join(parts)})"


def _describe(err: ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "additionalProperties" and not where:
        return err.message.replace("Additional properties are not allowed", "unknown argument(s)")
    if err.validator == "required":
        return err.message.replace("is a required property", "is required")
    label = f"argument {where!r}" if where else "arguments"
    if err.validator == "type":
        return f"{label} should be of type {err.validator_value}, got {_short(err.instance)}"
    if err.validator == "enum":
        return f"{label} must be one of {err.validator_value}, got {_short(err.instance)}"
    message = err.message
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{label}: {message}"


def check_arguments(spec: ToolSpec, validator: Draft202012Validator, arguments: Any) -> str | None:
    """None when ``arguments`` are valid, else a message naming every problem and the signature."""
    if not isinstance(arguments, dict):
        return (
            f"arguments for {spec.name} must be a JSON object, got {type(arguments).__name__}; "
            f"expected {signature(spec)}"
        )
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    shown = [_describe(e) for e in errors[:_MAX_SHOWN]]
    more = f" (and {len(errors) - _MAX_SHOWN} more)" if len(errors) > _MAX_SHOWN else ""
    return (
        f"invalid arguments for {spec.name}: {'; '.join(shown)}{more}. Expected {signature(spec)}"
    )
