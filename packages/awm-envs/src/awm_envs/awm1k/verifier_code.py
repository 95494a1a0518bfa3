"""Official verifier code, both directions: which function and mode a row holds, and a
self-contained ``verifiers.py`` that runs it with awm's native signature.

The release's verifiers take database *paths* (``verify_task(initial_db_path,
final_db_path)`` in sql mode, ``verify_task_completion(..., final_answer)`` in code
mode) and open them with ``sqlite3.connect``. awm's verifier sandbox passes two
read-only connections and refuses every import of awm itself, so an imported
``verifiers.py`` carries its adapter inline (:data:`PRELUDE`): each official
function runs with two placeholder paths, and its ``sqlite3``/``os`` names are
bound to small shims that open a private in-memory copy of the matching snapshot.
Each task's code is wrapped in a factory function of its own, so the helper names
of different tasks (every code-mode verifier is ``verify_task_completion``) never
collide, and a task whose code crashes fails alone.

The release's rows themselves ride along unchanged in :data:`RELEASE_ROWS`
(a module constant, never run), keyed by task id: ``awm envs export-awm`` writes
them back as they were, so a verifier is wrapped once on import and unwrapped on
export, never wrapped again. A bundle imported before the rows were kept is
unwrapped from its factories (:func:`legacy_original`), and a row that an older
export wrapped around such a bundle is recognised on import (:func:`unwrap_row`).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import Any

from awm_core.astparse import parse as parse_source

CODE_FUNCTION = "verify_task_completion"
SQL_FUNCTION = "verify_task"


@dataclass(frozen=True)
class OfficialVerifier:
    """One release verifier: its source, the function to call and its mode (``code``/``sql``)."""

    code: str
    function: str
    mode: str


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def detect(code: str) -> OfficialVerifier | None:
    """The function a release row's code defines, and its mode, from its name and signature.

    ``verify_task_completion`` is code mode and ``verify_task`` sql mode whatever
    file the row came from; otherwise the first top-level ``def verify_*`` (what the
    official code calls) decides by its signature: a ``final_answer`` parameter or
    three parameters is code mode, two is sql mode. None when nothing fits.
    """
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError):
        return None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("verify")]
    by_name = {n.name: n for n in defs}
    if CODE_FUNCTION in by_name:
        return OfficialVerifier(code, CODE_FUNCTION, "code")
    if SQL_FUNCTION in by_name:
        return OfficialVerifier(code, SQL_FUNCTION, "sql")
    for fn in defs:
        params = _params(fn)
        if "final_answer" in params or len(params) == 3:
            return OfficialVerifier(code, fn.name, "code")
        if len(params) == 2:
            return OfficialVerifier(code, fn.name, "sql")
    return None


# The shims every imported verifiers.py starts with. Only the standard library: the
# verifier sandbox allows nothing else (and no exec/compile).
PRELUDE = '''
import os as _awm_real_os
import sqlite3 as _awm_real_sqlite3

# Placeholder paths the official functions receive; opening one opens a private copy
# of the matching connection (_awm_images maps path -> connection during a call).
_AWM_INITIAL = "/awm-verify/initial.db"
_AWM_FINAL = "/awm-verify/final.db"
_awm_images = {}


def _awm_key(database):
    text = str(database)
    if text.startswith("file:"):
        text = text[5:].partition("?")[0]
    return text


class _AwmSqlite3:
    """sqlite3 as an official verifier sees it: the two placeholder paths open copies."""

    def __getattr__(self, name):
        return getattr(_awm_real_sqlite3, name)

    def connect(self, database, *args, **kwargs):
        image = _awm_images.get(_awm_key(database))
        if image is None:
            return _awm_real_sqlite3.connect(database, *args, **kwargs)
        keep = {k: v for k, v in kwargs.items() if k in ("detect_types", "isolation_level")}
        conn = _awm_real_sqlite3.connect(":memory:", **keep)
        image.backup(conn)  # a private copy, as a fresh connection to the file would be
        return conn


class _AwmPath:
    """os.path for official verifiers: the placeholder paths exist."""

    def __getattr__(self, name):
        return getattr(_awm_real_os.path, name)

    def exists(self, path):
        return _awm_key(path) in _awm_images or _awm_real_os.path.exists(path)

    def isfile(self, path):
        return _awm_key(path) in _awm_images or _awm_real_os.path.isfile(path)

    def getsize(self, path):
        image = _awm_images.get(_awm_key(path))
        if image is None:
            return _awm_real_os.path.getsize(path)
        return image.execute("PRAGMA page_count").fetchone()[0] * image.execute(
            "PRAGMA page_size"
        ).fetchone()[0]


class _AwmOs:
    """os for official verifiers: os.path with the placeholder paths."""

    path = _AwmPath()
    sep = "/"

    def __getattr__(self, name):
        return getattr(_awm_real_os, name)


_awm_sqlite3 = _AwmSqlite3()
_awm_os = _AwmOs()


def _awm_run(factory, mode, initial, final, final_answer):
    """Run one official verifier on two connections; return awm's native verdict."""
    _awm_images.clear()
    _awm_images[_AWM_INITIAL] = initial
    _awm_images[_AWM_FINAL] = final
    try:
        function = factory()
        if mode == "code":
            argc = function.__code__.co_argcount
            args = (_AWM_INITIAL, _AWM_FINAL, final_answer)[: max(argc, 2)]
            out = function(*args)
            result = out.get("result") if isinstance(out, dict) else None
            complete = isinstance(result, str) and result.strip().lower() == "complete"
            return {"complete": complete, "evidence": {"official": out}}
        out = function(_AWM_INITIAL, _AWM_FINAL)
        # sql mode only extracts evidence: the code+llm judge decides from it
        return {"complete": False, "evidence": {"official": out, "undecided": True}}
    finally:
        _awm_images.clear()
'''

# The factory's parameters that carry the shims: parameters are bound before the body
# runs, so code that reuses a shim's module-level name (a re-imported awm export) works.
_SHIMMED = {"sqlite3": "_awm_shim_sqlite3", "os": "_awm_shim_os"}


class _Rewrite(ast.NodeTransformer):
    """Bind ``sqlite3``/``os`` to the shims, drop ``__future__``, turn module globals nonlocal."""

    def __init__(self, top_names: set[str]) -> None:
        self.top_names = top_names

    def visit_Import(self, node: ast.Import) -> ast.AST | list[ast.stmt]:
        out: list[ast.stmt] = []
        plain: list[ast.alias] = []
        for alias in node.names:
            top = alias.name.partition(".")[0]
            if top in _SHIMMED and (alias.asname is None or alias.name == top):
                target = alias.asname or top
                out.append(_assign(target, ast.Name(_SHIMMED[top], ast.Load())))
            else:
                plain.append(alias)
        if plain:
            out.insert(0, ast.Import(names=plain))
        return out

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | list[ast.stmt] | None:
        if node.module == "__future__":
            return None
        if node.level == 0 and node.module in ("sqlite3", "os", "os.path"):
            base: ast.expr = ast.Name(_SHIMMED[node.module.partition(".")[0]], ast.Load())
            if node.module == "os.path":
                base = ast.Attribute(base, "path", ast.Load())
            if any(a.name == "*" for a in node.names):
                return node
            return [
                _assign(a.asname or a.name, ast.Attribute(base, a.name, ast.Load()))
                for a in node.names
            ]
        return node

    def visit_Global(self, node: ast.Global) -> ast.AST | list[ast.stmt]:
        ours = [n for n in node.names if n in self.top_names]
        rest = [n for n in node.names if n not in self.top_names]
        out: list[ast.stmt] = []
        if ours:
            out.append(ast.Nonlocal(names=ours))
        if rest:
            out.append(ast.Global(names=rest))
        return out


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


def _top_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        else:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return names


def factory_source(name: str, verifier: OfficialVerifier) -> str:
    """The official code as ``def name(): <code>; return <function>`` with the shims bound.

    Raises SyntaxError/ValueError when the code cannot be wrapped (e.g. ``import *``).
    """
    tree = parse_source(verifier.code)
    rewritten = _Rewrite(_top_names(tree)).visit(tree)
    body = list(rewritten.body) + [ast.Return(ast.Name(verifier.function, ast.Load()))]
    # a template (the node's fields differ between Python versions)
    module = ast.parse(
        f"def {name}(_awm_shim_sqlite3=_awm_sqlite3, _awm_shim_os=_awm_os):\n    pass\n"
    )
    fn = module.body[0]
    assert isinstance(fn, ast.FunctionDef)
    fn.body = body
    module = ast.fix_missing_locations(module)
    source = ast.unparse(module)
    compile(source, f"<verifier {name}>", "exec")  # fails here, not in the sandbox
    return source


def factory_name(idx: int) -> str:
    """The name of task ``idx``'s factory in ``verifiers.py``."""
    return f"_awm_official_{idx}"


def verifiers_module(
    verifiers: dict[int, tuple[str, OfficialVerifier]],
    rows: dict[str, dict[str, dict[str, Any]]] | None = None,
    factories: dict[int, str] | None = None,
) -> str:
    """A self-contained ``verifiers.py``: the prelude, then per task a factory and a
    native ``name(initial, final, final_answer=None)``. ``verifiers`` maps a task index
    to (native function name, official verifier); ``rows`` (task id -> file kind ->
    the row's ``verification`` object) is kept as :data:`RELEASE_ROWS` for the export.
    ``factories`` holds factory sources already made (``factory_source(factory_name(idx),
    ...)``): rewriting a verifier's syntax tree is most of an import's time, done once."""
    parts = [
        '"""Verifiers imported from the official AWM release, adapted to the native signature.\n\n'
        "Self-contained (standard library only) so awm's verifier sandbox runs it; written by\n"
        '`awm envs import-awm`."""\n',
        PRELUDE.strip() + "\n",
    ]
    for idx in sorted(verifiers):
        name, verifier = verifiers[idx]
        factory = factory_name(idx)
        made = (factories or {}).get(idx)
        parts.append(f"# task {idx}: official {verifier.mode}-mode {verifier.function}\n")
        parts.append((made if made is not None else factory_source(factory, verifier)) + "\n")
        parts.append(
            f"def {name}(initial, final, final_answer=None):\n"
            f"    return _awm_run({factory}, {verifier.mode!r}, initial, final, final_answer)\n"
        )
    if rows:
        parts.append(_rows_constant(rows))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- release rows

RELEASE_ROWS = "AWM1K_RELEASE_ROWS"


def _rows_constant(rows: dict[str, dict[str, dict[str, Any]]]) -> str:
    """``RELEASE_ROWS = {task id: JSON text}``: string literals, exact whatever the JSON."""
    lines = [
        "# The release's verifier rows of these tasks as they were (task id -> file -> the",
        "# row's `verification`), for `awm envs export-awm` to write back unchanged. Never run.",
        f"{RELEASE_ROWS} = {{",
    ]
    for task_id in sorted(rows):
        text = json.dumps(rows[task_id], sort_keys=True)
        lines.append(f"    {task_id!r}: {text!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def release_rows(source: str) -> dict[str, dict[str, dict[str, Any]]]:
    """The rows an imported ``verifiers.py`` keeps (:data:`RELEASE_ROWS`), or ``{}``."""
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError):
        return {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == [RELEASE_ROWS]
            and isinstance(node.value, ast.Dict)
        ):
            try:
                raw = ast.literal_eval(node.value)
                return {str(k): json.loads(v) for k, v in raw.items()}
            except (ValueError, TypeError, SyntaxError, json.JSONDecodeError):
                return {}
    return {}


# --------------------------------------------------------------------------- unwrapping

_SHIM_PARAMS = {v: k for k, v in _SHIMMED.items()}  # "_awm_shim_sqlite3" -> "sqlite3"


def _shim_module(node: ast.expr) -> str | None:
    """``sqlite3``/``os``/``os.path`` for an expression naming a shim (or its ``path``)."""
    if isinstance(node, ast.Name) and node.id in _SHIM_PARAMS:
        return _SHIM_PARAMS[node.id]
    if isinstance(node, ast.Attribute) and node.attr == "path":
        base = _shim_module(node.value)
        return "os.path" if base == "os" else None
    return None


class _Unrewrite(ast.NodeTransformer):
    """The inverse of :class:`_Rewrite`: shim bindings back to imports, nonlocal to global."""

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            module = _shim_module(node.value)
            if module is not None and "." not in module:
                alias = ast.alias(module, None if target == module else target)
                return ast.Import(names=[alias])
            if isinstance(node.value, ast.Attribute):
                module = _shim_module(node.value.value)
                if module is not None:
                    name = node.value.attr
                    alias = ast.alias(name, None if target == name else target)
                    return ast.ImportFrom(module=module, names=[alias], level=0)
        return self.generic_visit(node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        return ast.Global(names=node.names)


def _runner_target(fn: ast.FunctionDef) -> tuple[str, str] | None:
    """(factory, mode) for ``def name(...): return _awm_run(factory, mode, ...)``."""
    body = fn.body
    if len(body) == 1 and isinstance(body[0], ast.Return):
        call = body[0].value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "_awm_run"
            and len(call.args) >= 2
            and isinstance(call.args[0], ast.Name)
            and isinstance(call.args[1], ast.Constant)
            and call.args[1].value in ("code", "sql")
        ):
            return call.args[0].id, str(call.args[1].value)
    return None


def legacy_original(source: str, function: str | None = None) -> tuple[str, str] | None:
    """(official code, mode) of an imported verifier, unwrapped from its factory.

    ``function`` is the native name (``verify_task_3``); without it, the one native
    function that calls ``_awm_run``. None when ``source`` holds no such factory.
    """
    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError):
        return None
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    targets = {name: t for name, fn in defs.items() if (t := _runner_target(fn)) is not None}
    if function is not None:
        target = targets.get(function)
    else:
        target = next(iter(targets.values())) if len(targets) == 1 else None
    if target is None or target[0] not in defs:
        return None
    factory, mode = target
    body = list(defs[factory].body)
    if body and isinstance(body[-1], ast.Return):
        body = body[:-1]  # `return <the official function>`
    module = ast.Module(body=body, type_ignores=[])
    restored = ast.fix_missing_locations(_Unrewrite().visit(module))
    return ast.unparse(restored) + "\n", mode


def unwrap_row(code: str) -> str:
    """A release row's code with the wrapping of older awm exports taken off.

    An older ``export-awm`` of an imported bundle wrapped the imported verifier (prelude,
    factory, native function) in the official entry point; each round trip added a layer.
    Such a row is recognised by its ``_awm_run`` prelude and unwrapped to the official
    code inside, layer by layer; any other row comes back unchanged.
    """
    for _ in range(16):  # a bound on the layers, not a loop on untrusted input
        if "_awm_run" not in code or "_awm_official_" not in code:
            return code
        found = legacy_original(code)
        if found is None:
            return code
        code = found[0]
    return code
