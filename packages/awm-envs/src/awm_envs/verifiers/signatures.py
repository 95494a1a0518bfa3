"""Verifier signatures: which call convention a verifier uses, and what its output means.

Three conventions exist in the wild:

``native`` (awm)
    ``verify_x(initial, final, final_answer) -> {"complete": bool, "evidence": {...}}``
    with read-only ``sqlite3.Connection`` objects.
``verify_task`` (official release, "sql" mode)
    ``verify_task(initial_db_path, final_db_path) -> dict`` of free-form evidence and
    no verdict: the LLM judge decides.
``verify_task_completion`` (official release, "code" mode)
    ``verify_task_completion(initial_db_path, final_db_path, final_answer=None)
    -> {"result": "complete" | "others"}``.

Detection reads the source with :mod:`ast` in the host process (nothing is
executed outside the sandbox): the official function names win, then the
parameter names decide (a first parameter whose name mentions ``path`` means
file paths). Signatures are registered through the ``register_verifier_signatures``
hook (these three by awm-envs' own plugin), so a plugin can teach awm a fourth convention.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from awm_core.astparse import parse as parse_source
from awm_core.contracts import CallStyle, VerifierSignature
from awm_core.errors import AWMError
from awm_core.registry import get_verifier_signatures

# Keys an evidence-only verifier might use for its own verdict; read if boolean.
_VERDICT_KEYS = ("complete", "completed", "task_completed", "success", "passed", "is_complete")


class BadVerifierOutput(AWMError):
    """A verifier returned something its signature does not allow."""


class VerifierSignatureError(AWMError):
    """The verifier function is missing or its parameters match no known signature."""


def _pathlike(params: list[str]) -> bool:
    return bool(params) and "path" in params[0].lower()


@dataclass(frozen=True)
class NativeSignature:
    """awm's own convention: connections in, ``{"complete", "evidence"}`` out."""

    name: str = "native"
    call_style: CallStyle = "connections"
    passes_final_answer: bool = True
    priority: int = 100

    def matches(self, function_name: str, params: list[str]) -> bool:
        return len(params) == 3 and not _pathlike(params)

    def interpret(self, raw: Any) -> tuple[bool | None, dict[str, Any]]:
        if not isinstance(raw, dict):
            raise BadVerifierOutput(
                f"a native verifier must return a dict with a boolean 'complete'; got {type(raw).__name__}"
            )
        complete = raw.get("complete")
        if not isinstance(complete, bool):
            raise BadVerifierOutput(
                f"a native verifier's 'complete' must be true or false; got {complete!r}"
            )
        evidence = raw.get("evidence", {})
        if not isinstance(evidence, dict):
            raise BadVerifierOutput(
                f"a native verifier's 'evidence' must be a dict; got {type(evidence).__name__}"
            )
        extra = {k: v for k, v in raw.items() if k not in ("complete", "evidence")}
        return complete, {**evidence, **extra}


@dataclass(frozen=True)
class OfficialEvidenceSignature:
    """The official ``verify_task(initial_db_path, final_db_path)``: evidence, no verdict."""

    name: str = "verify_task"
    call_style: CallStyle = "paths"
    passes_final_answer: bool = False
    priority: int = 20

    def matches(self, function_name: str, params: list[str]) -> bool:
        if function_name == "verify_task":
            return len(params) >= 2
        return len(params) == 2 and _pathlike(params)

    def interpret(self, raw: Any) -> tuple[bool | None, dict[str, Any]]:
        if not isinstance(raw, dict):
            raise BadVerifierOutput(
                f"verify_task must return a dict of evidence; got {type(raw).__name__}"
            )
        complete = next(
            (raw[k] for k in _VERDICT_KEYS if isinstance(raw.get(k), bool)),
            None,
        )
        return complete, dict(raw)


@dataclass(frozen=True)
class OfficialCompletionSignature:
    """The official ``verify_task_completion(..., final_answer=None) -> {"result": ...}``."""

    name: str = "verify_task_completion"
    call_style: CallStyle = "paths"
    passes_final_answer: bool = True
    priority: int = 10

    def matches(self, function_name: str, params: list[str]) -> bool:
        if function_name == "verify_task_completion":
            return len(params) >= 2
        return len(params) == 3 and _pathlike(params) and params[2] == "final_answer"

    def interpret(self, raw: Any) -> tuple[bool | None, dict[str, Any]]:
        if not isinstance(raw, dict) or not isinstance(raw.get("result"), str):
            raise BadVerifierOutput(
                'verify_task_completion must return {"result": "complete" | "others"}; '
                f"got {raw!r:.200}"
            )
        result = raw["result"].strip().lower()
        if result not in ("complete", "others"):
            raise BadVerifierOutput(
                f'verify_task_completion\'s "result" must be "complete" or "others"; got {raw["result"]!r}'
            )
        return result == "complete", dict(raw)


BUILTIN_ADAPTERS: tuple[VerifierSignature, ...] = (
    NativeSignature(),
    OfficialEvidenceSignature(),
    OfficialCompletionSignature(),
)


@dataclass(frozen=True)
class DetectedVerifier:
    """A verifier function found in source, with the adapter that will call it."""

    function: str
    params: list[str]
    adapter: VerifierSignature

    def argument_count(self) -> int:
        """How many positional arguments the sandbox passes."""
        return 2 + (1 if self.adapter.passes_final_answer and len(self.params) >= 3 else 0)


@lru_cache(maxsize=512)
def _parse_functions(source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Top-level functions and their positional parameter names (cached: parsing is the cost)."""
    try:
        tree = parse_source(source)
    except SyntaxError as exc:
        raise VerifierSignatureError(f"the verifier source does not parse: {exc}") from exc
    return tuple(
        (node.name, tuple(p.arg for p in (*node.args.posonlyargs, *node.args.args)))
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    )


def _functions(source: str) -> dict[str, list[str]]:
    return {name: list(params) for name, params in _parse_functions(source)}


def default_function(source: str) -> str:
    """The verifier to run when a task names none: an official name, else the only ``verify_*``."""
    names = _functions(source)
    for official in ("verify_task_completion", "verify_task"):
        if official in names:
            return official
    candidates = [n for n in names if n.startswith("verify")]
    if len(candidates) == 1:
        return candidates[0]
    raise VerifierSignatureError(
        "the task names no verifier and the source does not make it unambiguous; "
        f"set Task.verifier to one of: {', '.join(candidates) or '(no verify_* function found)'}"
    )


def adapters() -> list[VerifierSignature]:
    """Every registered adapter, in the order they are tried."""
    return get_verifier_signatures()


def detect(source: str, function: str | None = None) -> DetectedVerifier:
    """Find ``function`` in ``source`` and the adapter whose convention it follows."""
    name = function or default_function(source)
    funcs = _functions(source)
    if name not in funcs:
        raise VerifierSignatureError(
            f"the verifier source defines no top-level function {name!r}; "
            f"it defines: {', '.join(funcs) or 'no functions'}"
        )
    params = funcs[name]
    for adapter in adapters():
        if adapter.matches(name, params):
            return DetectedVerifier(name, params, adapter)
    raise VerifierSignatureError(
        f"verifier {name}({', '.join(params)}) matches no known signature: expected "
        "native (initial, final, final_answer), verify_task(initial_db_path, final_db_path) "
        "or verify_task_completion(initial_db_path, final_db_path, final_answer=None)"
    )
