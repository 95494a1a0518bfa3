"""Diversity of a run's environments: scenario similarity, duplicated code, shared names.

Code duplication is measured on normalised function bodies: docstrings are
dropped and every local name, argument and attribute becomes a placeholder,
so two functions that differ only in naming hash the same. A function whose
hash appears in two or more environments is a cross-environment duplicate.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import sys
from pathlib import Path
from typing import Any

from awm_core.astparse import parse as parse_source
from awm_synth.diversity.embedding import cosine, get_embedder


class _Normalise(ast.NodeTransformer):
    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _alias(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self._alias(node.id), ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(arg=self._alias(node.arg), annotation=None), node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        # String constants are messages and SQL: keep their kind, not their wording.
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(value="s"), node)
        return node


def function_hashes(source: str) -> dict[str, str]:
    """``{function name: normalised hash}`` for the top-level functions of ``source``."""
    try:
        tree = parse_source(source)
    except SyntaxError:
        return {}
    out: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        body = list(node.body)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(getattr(body[0], "value", None), ast.Constant)
        ):
            body = body[1:]
        if sys.version_info >= (3, 12):
            fn = ast.FunctionDef(
                name="f",
                args=node.args,
                body=body or [ast.Pass()],
                decorator_list=[],
                returns=None,
                type_params=[],
            )
        else:  # no type_params field before 3.12: the dump is the same without it
            fn = ast.FunctionDef(
                name="f",
                args=node.args,
                body=body or [ast.Pass()],
                decorator_list=[],
                returns=None,
            )
        normal = _Normalise().visit(ast.fix_missing_locations(fn))
        dumped = ast.dump(normal, annotate_fields=False, include_attributes=False)
        out[node.name] = hashlib.sha256(dumped.encode()).hexdigest()[:16]
    return out


def _names(source: str) -> tuple[set[str], set[str]]:
    """Tool names (operation_id keywords) and class names in an app's source."""
    tools: set[str] = set()
    classes: set[str] = set()
    try:
        tree = parse_source(source)
    except SyntaxError:
        return tools, classes
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            classes.add(node.name)
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "operation_id"
            and isinstance(node.value, ast.Constant)
        ):
            tools.add(str(node.value.value))
    return tools, classes


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _pairwise(values: list[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "max": 0.0}
    return {"mean": round(sum(values) / len(values), 4), "max": round(max(values), 4)}


def diversity(
    bundles: dict[str, Path], scenario_texts: dict[str, str], embedder: str = "auto"
) -> dict[str, Any]:
    """The run's diversity figures (see the module docstring)."""
    sources = {
        name: (path / "app.py").read_text(encoding="utf-8")
        for name, path in bundles.items()
        if (path / "app.py").is_file()
    }
    # scenario similarity
    names = sorted(scenario_texts)
    sims: list[float] = []
    closest: tuple[str, str, float] | None = None
    if len(names) > 1:
        emb = get_embedder(embedder)
        vectors = dict(zip(names, emb.embed([scenario_texts[n] for n in names]), strict=True))
        for a, b in itertools.combinations(names, 2):
            s = cosine(vectors[a], vectors[b])
            sims.append(s)
            if closest is None or s > closest[2]:
                closest = (a, b, round(s, 4))
    # duplicate functions across environments
    owners: dict[str, set[str]] = {}
    total_functions = 0
    for env, src in sources.items():
        for h in function_hashes(src).values():
            owners.setdefault(h, set()).add(env)
            total_functions += 1
    shared = {h: envs for h, envs in owners.items() if len(envs) > 1}
    dup_functions = sum(
        1 for env, src in sources.items() for h in function_hashes(src).values() if h in shared
    )
    # name overlap
    tool_j: list[float] = []
    class_j: list[float] = []
    named = {env: _names(src) for env, src in sources.items()}
    for a, b in itertools.combinations(sorted(named), 2):
        tool_j.append(_jaccard(named[a][0], named[b][0]))
        class_j.append(_jaccard(named[a][1], named[b][1]))
    return {
        "scenario_similarity": {
            **_pairwise(sims),
            "closest_pair": list(closest) if closest else None,
        },
        "functions": total_functions,
        "duplicate_functions": dup_functions,
        "duplicate_function_share": round(dup_functions / total_functions, 4)
        if total_functions
        else 0.0,
        "shared_function_hashes": len(shared),
        "tool_name_jaccard": _pairwise(tool_j),
        "class_name_jaccard": _pairwise(class_j),
    }
