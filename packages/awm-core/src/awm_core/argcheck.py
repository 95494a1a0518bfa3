"""Check tool arguments against the tool's input schema before anything runs.

The one argument checker: the agent loop (before a call leaves the model's
turn) and the environment runtime (before a call reaches an endpoint) give the
same message. The MCP SDK does not validate arguments, and FastAPI's own
messages talk about ``body``/``query`` locations an agent never sees; this
answers in the agent's terms (argument names, expected types, the valid choices)
and ends with the tool's signature so the next call can be right.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

_MAX_SHOWN = 5

__all__ = ["check_arguments", "make_validator", "signature"]


def make_validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A compiled validator for one tool's input schema (compile once, check many calls)."""
    return Draft202012Validator(schema)


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def signature(name: str, schema: Mapping[str, Any]) -> str:
    """``name(a: integer, b?: string)``: the shape of a call, for error messages."""
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = []
    for key, schema in props.items():
        kind = (
            schema.get("type")
            or "|".join(s.get("type", "?") for s in schema.get("anyOf", []) if isinstance(s, dict))
            or "any"
        )
        parts.append(f"{key}{'' if key in required else '?'}: {kind}")
    return f"{name}({', '.join(parts)})"


def _describe(err: ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    message = str(err.message)
    if err.validator == "additionalProperties" and not where:
        return message.replace("Additional properties are not allowed", "unknown argument(s)")
    if err.validator == "required":
        return message.replace("is a required property", "is required")
    label = f"argument {where!r}" if where else "arguments"
    if err.validator == "type":
        return f"{label} should be of type {err.validator_value}, got {_short(err.instance)}"
    if err.validator == "enum":
        return f"{label} must be one of {err.validator_value}, got {_short(err.instance)}"
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{label}: {message}"


def check_arguments(
    name: str,
    schema: Mapping[str, Any],
    arguments: Any,
    validator: Draft202012Validator | None = None,
) -> str | None:
    """None when ``arguments`` are valid, else a message naming every problem and the signature.

    Pass ``validator`` (from :func:`make_validator`) when checking many calls of one tool.
    """
    if not isinstance(arguments, dict):
        return (
            f"arguments for {name} must be a JSON object, got {type(arguments).__name__}; "
            f"expected {signature(name, schema)}"
        )
    checker = validator if validator is not None else make_validator(schema)
    errors = sorted(checker.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    shown = [_describe(e) for e in errors[:_MAX_SHOWN]]
    more = f" (and {len(errors) - _MAX_SHOWN} more)" if len(errors) > _MAX_SHOWN else ""
    return (
        f"invalid arguments for {name}: {'; '.join(shown)}{more}. "
        f"Expected {signature(name, schema)}"
    )
