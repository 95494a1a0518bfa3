"""BFCLv3's test cases and possible answers, read from the bfcl-eval wheel with its own loaders."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import cache
from typing import Any

from awm_bench.bfcl.cases import CATEGORIES, BfclCase, subset
from awm_bench.bfcl.upstream import bfcl


@cache
def _entries(category: str) -> tuple[dict[str, Any], ...]:
    if category not in CATEGORIES:
        raise KeyError(f"not a BFCLv3 category: {category!r} (one of {', '.join(CATEGORIES)})")
    load_file = bfcl.attr("bfcl_eval.utils", "load_file")
    files = bfcl.attr("bfcl_eval.constants.category_mapping", "TEST_FILE_MAPPING")
    prompt_path = bfcl.attr("bfcl_eval.constants.eval_config", "PROMPT_PATH")
    return tuple(load_file(prompt_path / files[category]))


@cache
def _answers(category: str) -> dict[str, list[Any]]:
    files = bfcl.attr("bfcl_eval.constants.category_mapping", "TEST_FILE_MAPPING")
    path = bfcl.attr("bfcl_eval.constants.eval_config", "POSSIBLE_ANSWER_PATH") / files[category]
    if not path.exists():  # relevance and irrelevance have none
        return {}
    load_file = bfcl.attr("bfcl_eval.utils", "load_file")
    return {e["id"]: e["ground_truth"] for e in load_file(path)}


def case_ids(category: str) -> list[str]:
    """Every id of ``category``, in file order."""
    return [e["id"] for e in _entries(category)]


def load_cases(
    categories: Sequence[str] = CATEGORIES,
    *,
    per_category: int | None = None,
    ids: Sequence[str] | None = None,
) -> list[BfclCase]:
    """The cases of ``categories`` (a deterministic sample of ``per_category`` each),
    or exactly ``ids``. Multi-turn entries get their function docs the way
    bfcl-eval's generation step adds them (held-out functions removed)."""
    process = bfcl.attr("bfcl_eval._llm_response_generation", "process_multi_turn_test_case")
    wanted = set(ids) if ids is not None else None
    out: list[BfclCase] = []
    for category in categories:
        entries = [e for e in _entries(category) if wanted is None or e["id"] in wanted]
        keep = set(subset([e["id"] for e in entries], per_category if wanted is None else None))
        chosen = [copy.deepcopy(e) for e in entries if e["id"] in keep]
        process(chosen)
        answers = _answers(category)
        for entry in chosen:
            out.append(
                BfclCase(
                    id=entry["id"],
                    turns=entry["question"],
                    functions=entry["function"],
                    ground_truth=answers.get(entry["id"], []),
                    missed={int(k): v for k, v in entry.get("missed_function", {}).items()},
                    initial_config=entry.get("initial_config", {}),
                    involved_classes=entry.get("involved_classes", []),
                    entry=entry,
                    signatures=_signatures(tuple(entry.get("involved_classes", []))),
                )
            )
    return out


@cache
def _signatures(classes: tuple[str, ...]) -> dict[str, list[str]]:
    """``{method: parameter names}`` of BFCL's multi-turn tool classes, from the code."""
    import importlib
    import inspect

    modules = bfcl.attr(
        "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils", "CLASS_FILE_PATH_MAPPING"
    )
    out: dict[str, list[str]] = {}
    for name in classes:
        cls = getattr(importlib.import_module(modules[name]), name)
        for method, fn in inspect.getmembers(cls, inspect.isfunction):
            if not method.startswith("_"):
                out[method] = [p for p in inspect.signature(fn).parameters if p != "self"]
    return out


def tool_schemas(case: BfclCase, functions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function docs as JSON-Schema tools, converted by bfcl-eval as it converts
    them for open models (language hints for Java/JavaScript included); each keeps
    BFCL's own name under ``name`` (the caller maps it to an awm tool name)."""
    preprocess = bfcl.attr(
        "bfcl_eval.model_handler.utils", "func_doc_language_specific_pre_processing"
    )
    convert = bfcl.attr("bfcl_eval.model_handler.utils", "convert_to_tool")
    mapping = bfcl.attr("bfcl_eval.constants.type_mappings", "GORILLA_TO_OPENAPI")
    style = bfcl.attr("bfcl_eval.model_handler.model_style", "ModelStyle")
    docs = preprocess(copy.deepcopy(list(functions)), case.category)
    converted = list(convert(docs, mapping, style.OSSMODEL))
    # bfcl renames "a.b" to "a_b" for this style; put BFCL's name back, the order is kept
    return [{**tool, "name": doc["name"]} for tool, doc in zip(converted, functions, strict=True)]
