"""Hostile argument sets for a tool, derived from its input schema."""

from __future__ import annotations

from typing import Any

from awm_core.models import ToolSpec

HUGE = "x" * (1024 * 1024)
UNICODE = "名前\u202e🙂\x00\ud7ff"
INJECTION = "1; DROP TABLE books; --' OR '1'='1"
HOSTILE_STRINGS = (UNICODE, INJECTION, HUGE)


def _wrong_type(schema: dict[str, Any]) -> Any:
    kinds = {schema.get("type")} | {
        s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)
    }
    if "integer" in kinds or "number" in kinds:
        return "not a number"
    if "string" in kinds:
        return {"nested": ["object"]}
    if "boolean" in kinds:
        return "maybe"
    return None


def must_fail_cases(spec: ToolSpec) -> list[tuple[str, Any]]:
    """Arguments every correct runtime must reject (the call must be an error result)."""
    props: dict[str, Any] = spec.input_schema.get("properties", {})
    required: list[str] = spec.input_schema.get("required", [])
    cases: list[tuple[str, Any]] = [
        ("not an object", ["a", "list"]),
        ("a string", '{"json": "in a string"}'),
        ("huge string as arguments", HUGE),
        ("extra argument", {"__not_an_argument__": 1}),
        ("huge extra argument", {"x" * 1000: HUGE}),
        ("unicode extra argument", {UNICODE: INJECTION}),
    ]
    if required:
        cases.append(("missing required", {}))
    for name, schema in props.items():
        wrong = _wrong_type(schema)
        if wrong is not None:
            cases.append((f"wrong type for {name}", {name: wrong}))
        kinds = {schema.get("type")} | {
            s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)
        }
        if "string" not in kinds and kinds & {"integer", "number"}:
            for s in HOSTILE_STRINGS:
                cases.append((f"hostile string for {name}", {name: s}))
    return cases


def may_pass_cases(spec: ToolSpec) -> list[tuple[str, Any]]:
    """Well-typed but hostile strings: the tool may accept them, but must never break anything."""
    props: dict[str, Any] = spec.input_schema.get("properties", {})
    out = []
    for name, schema in props.items():
        kinds = {schema.get("type")} | {
            s.get("type") for s in schema.get("anyOf", []) if isinstance(s, dict)
        }
        if "string" in kinds:
            for s in HOSTILE_STRINGS:
                out.append((f"hostile {name}", {name: s}))
    return out
