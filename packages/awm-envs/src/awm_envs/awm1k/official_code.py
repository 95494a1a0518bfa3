"""What the official AWM code needs from an export: tool code, verifier rows, API spec.

The official server patches ``full_code`` line by line: it prepends two lines (so a
``from __future__`` import becomes a SyntaxError), replaces every line containing
``create_engine(`` with its own one-line call, and replaces the ``uvicorn.run(app``
line of a ``__main__`` block with its start-up code at four spaces' indent. Its
verifier runner (and OpenEnv's) execs a row and calls the first ``def verify_*``, by
keyword (``initial_db_path``, ``final_db_path``, ``final_answer``); OpenEnv refuses
``__future__`` imports in verifier code.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from awm_core.astparse import parse as parse_source
from awm_core.models import Task, ToolSpec
from awm_envs.awm1k.repair import replace_calls, restore_legacy_main, strip_session_shim
from awm_envs.awm1k.verifier_code import CODE_FUNCTION, SQL_FUNCTION

# The official row's entry points, first in the row (the official code and OpenEnv call
# the first ``def verify_*`` they find). Opened read-only: the file is never changed.
_CODE_WRAPPER = '''
def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    """awm's native verifier {name!r} behind the official code-mode signature."""
    initial = sqlite3.connect(initial_db_path)
    final = sqlite3.connect(final_db_path)
    try:
        initial.execute("PRAGMA query_only = ON")
        final.execute("PRAGMA query_only = ON")
        out = {name}(initial, final, final_answer)
    finally:
        initial.close()
        final.close()
    complete = isinstance(out, dict) and out.get("complete") is True
    evidence = out.get("evidence") if isinstance(out, dict) else None
    return {{"result": "complete" if complete else "others", "evidence": evidence}}
'''

_SQL_WRAPPER = '''
def verify_task(initial_db_path, final_db_path):
    """awm's native verifier {name!r} behind the official sql-mode signature: evidence for
    the judge (the verdict without a final answer is part of it)."""
    initial = sqlite3.connect(initial_db_path)
    final = sqlite3.connect(final_db_path)
    try:
        initial.execute("PRAGMA query_only = ON")
        final.execute("PRAGMA query_only = ON")
        out = {name}(initial, final, None)
    finally:
        initial.close()
        final.close()
    if not isinstance(out, dict):
        return {{"verifier_output": out}}
    return {{"complete_without_answer": out.get("complete"), "evidence": out.get("evidence")}}
'''


def _drop_future_imports(code: str) -> str:
    tree = parse_source(code)
    lines = code.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            end = node.end_lineno or node.lineno
            del lines[node.lineno - 1 : end]
    return "".join(lines)


_MAIN_BLOCK = """

if __name__ == "__main__":
    import uvicorn

    host = os.environ.get("HOST", "127.0.0.1")
    port = int(os.environ.get("PORT", "8000"))
    uvicorn.run(app, host=host, port=port)
"""


def official_full_code(app_source: str, scenario: str) -> str:
    """A bundle's app.py as the official server (and OpenEnv) can patch and start it.

    No ``__future__`` import; every ``create_engine(...)`` one line long, reading the
    database URL from ``DATABASE_PATH`` (the official default path otherwise); ``os``
    imported; an ``if __name__ == "__main__":`` block that starts uvicorn with host and
    port from ``HOST``/``PORT``, whose ``uvicorn.run(app`` line the official patcher
    replaces. What import added (the session shim) is removed first, so an imported app
    goes back out as the release's code.
    """
    code, legacy = strip_session_shim(app_source)
    if legacy:
        code = restore_legacy_main(code)
    code = _drop_future_imports(code)
    default = f"sqlite:///./outputs/databases/{scenario}.db"
    code = replace_calls(
        code,
        "create_engine",
        lambda _: (
            f'create_engine(os.environ.get("DATABASE_PATH", "{default}"), '
            'connect_args={"check_same_thread": False})'
        ),
    )
    tree = parse_source(code)
    imports_os = any(
        isinstance(n, ast.Import) and any(a.name == "os" and a.asname is None for a in n.names)
        for n in tree.body
    )
    if not imports_os:
        code = "import os\n" + code
    has_main = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    if not has_main:
        code = code.rstrip() + "\n" + _MAIN_BLOCK
    return code


# --------------------------------------------------------------------------- verifiers


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def verifier_row_code(verifiers_source: str, function: str, mode: str) -> str:
    """One task's verifier as a self-contained official row (``mode`` ``code`` or ``sql``).

    The row holds the module's imports and constants (``__future__`` dropped), then the
    official entry point (``verify_task_completion`` or ``verify_task``) as the first
    ``def verify_*``, then only the functions and classes the task's native verifier
    reaches.
    """
    tree = parse_source(_drop_future_imports(verifiers_source))
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the module docstring
    defs = {
        n.name: n
        for n in body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    todo = [function]
    for node in body:  # module-level statements may call module functions
        if node not in defs.values():
            todo.extend(_names_used(node))
    wanted: set[str] = set()
    while todo:
        name = todo.pop()
        if name in defs and name not in wanted:
            wanted.add(name)
            todo.extend(_names_used(defs[name]))
    wrapper = (_CODE_WRAPPER if mode == "code" else _SQL_WRAPPER).format(name=function).strip()
    parts = ["import sqlite3"]
    placed = False
    for node in body:
        is_def = node in defs.values()
        if is_def and not placed:
            parts.append(wrapper)  # before any other def: the official code calls the first
            placed = True
        if is_def and getattr(node, "name", "") not in wanted:
            continue
        if not _is_sqlite_import(node):
            parts.append(ast.unparse(node))
    if not placed:
        parts.append(wrapper)
    return "\n\n".join(parts) + "\n"


def raw_response(task: Task, mode: str, native: str | None = None) -> str:
    """A row's ``verification.raw_response``: JSON text in the shape of the official
    generator's reply (whose ``python_code`` is the row's ``code`` and is not repeated),
    whose ``reasoning``, ``success_criteria`` and ``failure_criteria`` OpenEnv's port hands
    its sql-mode judge. ``native`` names awm's verifier the row wraps (None: the row is
    the release's own code)."""
    function = CODE_FUNCTION if mode == "code" else SQL_FUNCTION
    if native is None:
        reasoning = f"The release's {mode}-mode verifier of this task, as imported into awm."
    elif mode == "code":
        reasoning = (
            f"{function} runs awm's verifier {native!r} for this task on the initial and final "
            "databases and the final answer: 'complete' when it decides the task is done, "
            "'others' otherwise; 'evidence' holds what it checked."
        )
    else:
        reasoning = (
            f"{function} runs awm's verifier {native!r} for this task on the initial and final "
            "databases. 'complete_without_answer' is its verdict from the databases alone (it "
            "does not see the final answer: a question must also be answered as the success "
            "criteria say); 'evidence' holds what it checked."
        )
    if task.reference_answer:
        reasoning += f" A correct final answer: {task.reference_answer}"
    if task.expects_refusal:
        reasoning += " The right outcome is to change nothing and say why."
    reply = {
        "reasoning": reasoning,
        "function_name": function,
        "success_criteria": "\n".join(task.success_criteria),
        "failure_criteria": "\n".join(task.failure_criteria),
    }
    return json.dumps(reply)


def _is_sqlite_import(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Import)
        and [a.name for a in node.names] == ["sqlite3"]
        and not any(a.asname for a in node.names)
    )


# --------------------------------------------------------------------------- API spec

_OFFICIAL_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "float",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _resolve(defs.get(ref.rsplit("/", 1)[1], {}), defs)
    return schema


def _plain(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of a nullable schema (``anyOf: [X, null]``), references resolved."""
    schema = _resolve(schema, defs)
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key, []) if _resolve(o, defs).get("type") != "null"]
        if len(options) == 1:
            merged = {k: v for k, v in schema.items() if k != key}
            return {**_plain(options[0], defs), **merged}
    return schema


def official_type(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> str:
    """The release's type name for a JSON Schema: string, integer, float, boolean, array, object."""
    plain = _plain(schema, defs or {})
    kind = plain.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None and "properties" in plain:
        kind = "object"
    return _OFFICIAL_TYPES.get(str(kind), "string")


def _example(schema: dict[str, Any]) -> Any:
    if "example" in schema:
        return schema["example"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    return None


def _field(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    plain = _plain(schema, defs)
    out: dict[str, Any] = {
        "type": official_type(plain, defs),
        "description": str(plain.get("description") or plain.get("title") or ""),
        "example": _example(plain),
    }
    if depth < 6:
        if out["type"] == "array":
            items = _plain(plain.get("items", {}), defs)
            out["items"] = (
                response_map(items, defs, depth + 1)
                if "properties" in items
                else _field(items, defs, depth + 1)
            )
        elif out["type"] == "object" and "properties" in plain:
            out["properties"] = response_map(plain, defs, depth + 1)
    return out


def response_map(
    schema: dict[str, Any] | None, defs: dict[str, Any] | None = None, depth: int = 0
) -> dict[str, Any]:
    """The release's response format: ``{field: {type, description, example[, items]}}``."""
    if not schema:
        return {}
    defs = {**(defs or {}), **schema.get("$defs", {})}
    plain = _plain(schema, defs)
    if "properties" not in plain:
        return {"result": _field(plain, defs, depth)} if plain else {}
    return {name: _field(sub, defs, depth) for name, sub in plain["properties"].items()}


def _tags(tool: ToolSpec) -> list[str]:
    if tool.tags:
        return list(tool.tags)
    segments = [s for s in (tool.path or "").split("/") if s and not s.startswith("{")]
    return [segments[0]] if segments else [tool.name.split("_")[-1]]


def official_endpoint(
    tool: ToolSpec, path_params: frozenset[str], query_params: frozenset[str]
) -> dict[str, Any]:
    """One tool as an endpoint of the release's ``gen_spec.jsonl``."""
    props: dict[str, Any] = tool.input_schema.get("properties", {})
    defs: dict[str, Any] = tool.input_schema.get("$defs", {})
    required = set(tool.input_schema.get("required", []))
    params: dict[str, Any] = {}
    for name, schema in props.items():
        if name in path_params:
            where = "path"
        elif name in query_params:
            where = "query"
        else:
            where = "body"
        plain = _plain(schema, defs)
        params[name] = {
            "type": official_type(plain, defs),
            "param_type": where,
            "required": name in required or where == "path",
            "description": str(plain.get("description") or plain.get("title") or ""),
            "example": _example(plain),
        }
    description = " ".join(tool.description.split())
    return {
        "path": tool.path or f"/{tool.name}",
        "method": (tool.method or "POST").upper(),
        "summary": tool.description.strip().split("\n")[0][:80],
        "description": description[:200],
        "operation_id": tool.name,
        "tags": _tags(tool),
        "request_params": params,
        "response": response_map(tool.output_schema),
        "required_tables": [],
        "required_fields": {},
    }
