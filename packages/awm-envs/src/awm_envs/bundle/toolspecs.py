"""Derive the tools an agent sees from a FastAPI app's routes.

The app's own OpenAPI document is the source: FastAPI already turned every
parameter and Pydantic model into JSON Schema there, so the input schema an
agent reads is exactly what FastAPI will validate. We flatten it into the
``call_tool(name, arguments)`` shape: path and query parameters by name, the
JSON body's fields merged alongside them.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: reading a bundle's files needs no FastAPI
    from fastapi import FastAPI

from awm_core.models import ToolSpec

_REF_PREFIX = "#/components/schemas/"
_SUCCESS_CODES = ("200", "201", "202", "203", "204")


class ToolDerivationError(ValueError):
    """A route cannot be expressed as a flat-argument tool (e.g. a body field shadows a path parameter)."""


def _collect_refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            found.add(ref[len(_REF_PREFIX) :])
        for value in node.values():
            _collect_refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _collect_refs(value, found)


def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith(_REF_PREFIX):
                out[key] = "#/$defs/" + value[len(_REF_PREFIX) :]
            else:
                out[key] = _rewrite_refs(value)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def _self_contained(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """Inline every referenced component as ``$defs`` so the schema stands alone."""
    needed: set[str] = set()
    _collect_refs(schema, needed)
    defs: dict[str, Any] = {}
    pending = list(needed)
    while pending:
        name = pending.pop()
        if name in defs or name not in components:
            continue
        defs[name] = components[name]
        more: set[str] = set()
        _collect_refs(components[name], more)
        pending.extend(more - set(defs))
    out: dict[str, Any] = _rewrite_refs(copy.deepcopy(schema))
    if defs:
        # by name: the walk above visits a set, whose order changes with the hash seed, and a
        # tools.json that changed bytes on every regeneration would change the bundle's digest
        out["$defs"] = _rewrite_refs(copy.deepcopy(dict(sorted(defs.items()))))
    return out


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        resolved: dict[str, Any] = components.get(ref[len(_REF_PREFIX) :], {})
        return resolved
    return schema


def derive_tool_specs(app: FastAPI) -> list[ToolSpec]:
    """One :class:`ToolSpec` per route operation, in route order.

    Raises :class:`ToolDerivationError` naming the route when a body field and
    a path/query parameter share a name (the flattened arguments would be ambiguous).
    """
    doc = app.openapi()
    components: dict[str, Any] = doc.get("components", {}).get("schemas", {})
    specs: list[ToolSpec] = []
    for path, methods in doc.get("paths", {}).items():
        for method, op in methods.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            name = op["operationId"]
            properties: dict[str, Any] = {}
            required: list[str] = []
            for param in op.get("parameters", []):
                if param.get("in") not in ("path", "query"):
                    continue  # headers and cookies are not the agent's to set
                schema = dict(param.get("schema", {}))
                if param.get("description") and "description" not in schema:
                    schema["description"] = param["description"]
                properties[param["name"]] = schema
                if param.get("required"):
                    required.append(param["name"])
            body = op.get("requestBody")
            if body:
                content = body.get("content", {})
                media: dict[str, Any] = content.get("application/json") or next(
                    iter(content.values()), {}
                )
                body_schema = _resolve(media.get("schema", {}), components)
                for field, schema in body_schema.get("properties", {}).items():
                    if field in properties:
                        raise ToolDerivationError(
                            f"route {method.upper()} {path} ({name}): body field {field!r} "
                            "has the same name as a path/query parameter; rename one"
                        )
                    properties[field] = schema
                if body.get("required", False):
                    required.extend(body_schema.get("required", []))
            input_schema: dict[str, Any] = {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
            }
            if required:
                input_schema["required"] = required
            output_schema = None
            for code in _SUCCESS_CODES:
                resp = op.get("responses", {}).get(code)
                if resp:
                    schema = resp.get("content", {}).get("application/json", {}).get("schema")
                    if schema:
                        output_schema = _self_contained(schema, components)
                    break
            description = (op.get("description") or op.get("summary") or "").strip()
            specs.append(
                ToolSpec(
                    name=name,
                    description=description,
                    input_schema=_self_contained(input_schema, components),
                    output_schema=output_schema,
                    method=method.upper(),
                    path=path,
                    tags=list(op.get("tags", [])),
                )
            )
    return specs


def route_bindings(app: FastAPI) -> dict[str, tuple[str, str, frozenset[str], frozenset[str]]]:
    """``{tool: (METHOD, path, path_params, query_params)}`` from the OpenAPI document.

    Used to build a real HTTP-shaped request for routes the direct path cannot run.
    """
    doc = app.openapi()
    out: dict[str, tuple[str, str, frozenset[str], frozenset[str]]] = {}
    for path, methods in doc.get("paths", {}).items():
        for method, op in methods.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            params = op.get("parameters", [])
            out[op["operationId"]] = (
                method.upper(),
                path,
                frozenset(p["name"] for p in params if p.get("in") == "path"),
                frozenset(p["name"] for p in params if p.get("in") == "query"),
            )
    return out
