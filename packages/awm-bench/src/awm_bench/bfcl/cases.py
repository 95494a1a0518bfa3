"""BFCLv3 test cases as awm sees them, and the oracle built from their ground truth.

Nothing here imports ``bfcl_eval``: the case model, tool-name mapping, the oracle's
choice among BFCL's possible answers, the parsing of multi-turn ground-truth call
strings and the v3 overall formula are awm's own logic, tested in the main suite.
Loading the data and scoring go through bfcl-eval itself (:mod:`awm_bench.bfcl.data`,
:mod:`awm_bench.bfcl.scoring`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_core.models import Complexity, Task, ToolCallStep
from awm_core.models.task import complexity_for_calls

# The v3 categories, grouped as v3's overall score groups them.
NON_LIVE = (
    "simple",
    "java",
    "javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
)
LIVE = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
MULTI_TURN = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)
CATEGORIES: tuple[str, ...] = NON_LIVE + LIVE + MULTI_TURN
GROUPS: dict[str, tuple[str, ...]] = {"non_live": NON_LIVE, "live": LIVE, "multi_turn": MULTI_TURN}

# The user turn BFCL's FC handlers send when a held-out function is revealed
# (bfcl_eval.constants.default_prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC);
# checked against the installed package in the bfcl session's tests.
ADDITIONAL_FUNCTION_PROMPT = (
    "I have updated some more functions you can choose from. What about now?"
)

# BFCLv3 cases no answer can pass, found by scoring the oracle on all 4,441 cases with
# bfcl-eval 2025.8.6.2's own checker (the oracle ceiling is 4,430 / 4,441 = 99.75%):
# the possible answers contradict the function docs or the checker's own conversions.
ORACLE_UNREACHABLE: dict[str, str] = {
    "simple_363": "the answer names a function the case does not offer",
    "parallel_multiple_26": "the answer passes a parameter the function does not declare",
    "java_36": "ArrayList<any> elements are compared as strings, the answer holds an int and a bool",
    "java_64": "the possible answer is a string split into characters",
    "java_65": "ArrayList<any> elements are compared as strings, the answer holds bools",
    "javascript_41": "the answer names `queue`, the case offers `queue_1`",
    "live_simple_106-63-0": "the checker rejects the empty array the answer requires",
    "live_simple_112-68-0": "the checker rejects the empty array the answer requires",
    "live_multiple_507-149-4": "the answer omits a parameter the doc requires",
    "live_multiple_862-181-3": "the answer passes a parameter the function does not declare",
    "live_multiple_964-207-0": "the answer omits a parameter the doc requires",
}

IRRELEVANT_ANSWER = "None of the available functions can do this."


def category_of(case_id: str) -> str:
    """``live_simple_12`` -> ``live_simple`` (BFCL's own rule: everything before the last ``_``)."""
    return case_id.rsplit("_", 1)[0]


def tool_name(name: str) -> str:
    """A BFCL function name as an awm tool name (``math.factorial`` -> ``math_factorial``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return cleaned if re.match(r"[A-Za-z_]", cleaned) else f"_{cleaned}"


@dataclass(frozen=True)
class BfclCase:
    """One BFCLv3 test entry with its ground truth, ready to run in either mode.

    ``functions`` are the docs offered at the start (for multi-turn, the
    involved classes' docs minus held-out ones); ``missed`` maps a turn index to
    the docs revealed at that turn. ``ground_truth`` is BFCL's: a list of
    ``{function: {param: [allowed values]}}`` for single-turn AST categories, a
    list per turn of call strings for multi-turn, empty for (ir)relevance.
    """

    id: str
    turns: list[list[dict[str, Any]]]
    functions: list[dict[str, Any]]
    ground_truth: list[Any] = field(default_factory=list)
    missed: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    initial_config: dict[str, Any] = field(default_factory=dict)
    involved_classes: list[str] = field(default_factory=list)
    entry: dict[str, Any] = field(default_factory=dict, repr=False)
    # {function: parameter names in call order}: the tool classes' signatures for
    # multi-turn (some docs list parameters in another order); the docs' otherwise
    signatures: dict[str, list[str]] = field(default_factory=dict)

    @property
    def category(self) -> str:
        return category_of(self.id)

    @property
    def multi_turn(self) -> bool:
        return self.category in MULTI_TURN

    @property
    def language(self) -> str:
        return {"java": "Java", "javascript": "JavaScript"}.get(self.category, "Python")

    @property
    def expects_no_call(self) -> bool:
        return "irrelevance" in self.category

    def functions_at(self, turn: int) -> list[dict[str, Any]]:
        """The function docs the model may see during ``turn`` (held-out ones once revealed)."""
        docs = list(self.functions)
        for k in sorted(self.missed):
            if k <= turn:
                docs.extend(self.missed[k])
        return docs

    def name_map(self) -> dict[str, str]:
        """``{awm tool name: BFCL function name}`` over every function of the case."""
        out: dict[str, str] = {}
        for doc in self.functions_at(len(self.turns)):
            name = str(doc["name"])
            key = tool_name(name)
            while key in out and out[key] != name:  # two names that clean to the same one
                key += "_"
            out[key] = name
        return out

    def turn_messages(self, turn: int) -> list[dict[str, Any]]:
        """The messages of ``turn``; a held-out turn gets BFCL's "functions were added" prompt."""
        messages = self.turns[turn]
        if not messages and turn in self.missed:
            return [{"role": "user", "content": ADDITIONAL_FUNCTION_PROMPT}]
        return messages


def required_calls(case: BfclCase) -> int:
    """How many calls BFCL's ground truth asks of ``case`` (the paper's Table 5 buckets
    BFCLv3 by it): every call of every turn (multi-turn), the expected calls (single-turn
    AST), none (irrelevance), one (live relevance: any call passes)."""
    if case.multi_turn:
        return sum(len(turn) for turn in case.ground_truth)
    if case.expects_no_call:
        return 0
    if case.category == "live_relevance":
        return 1
    return len(case.ground_truth)


# --------------------------------------------------------------------------- the oracle


def _first_option(options: Any) -> tuple[bool, Any]:
    """``(present, value)``: the first allowed value; ``""`` first means "omit it"."""
    if not isinstance(options, list) or not options:
        return True, _concrete(options)
    first = options[0]
    if isinstance(first, str) and first == "":
        return False, None
    return True, _concrete(first)


def _concrete(candidate: Any) -> Any:
    """One possible-answer candidate as a concrete value (nested dicts hold option lists)."""
    if isinstance(candidate, dict):
        out = {}
        for key, options in candidate.items():
            present, value = _first_option(options)
            if present:
                out[key] = value
        return out
    if isinstance(candidate, list):
        return [_concrete(x) for x in candidate]
    return candidate


def pick_answer(possible: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """Concrete arguments from one BFCL possible answer: the first allowed value of each
    parameter, and an optional parameter (``""`` listed first) left out unless the
    function doc requires it (then its first real value is given)."""
    args: dict[str, Any] = {}
    for param, options in possible.items():
        if param in required and isinstance(options, list) and options[:1] == [""]:
            options = options[1:] or options
        present, value = _first_option(options)
        if present:
            args[param] = value
    return args


def parse_call(call: str, params: Mapping[str, Sequence[str]]) -> tuple[str, dict[str, Any]]:
    """A multi-turn ground-truth string (``mv(source='a', destination='b')``,
    ``sort('f.pdf')``) as ``(name, keyword arguments)``; positional arguments are
    named from ``params[name]`` (the function doc's parameter order)."""
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {call!r}") from exc
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call: {call!r}")
    name = ast.unparse(node.func)
    order = list(params.get(name, ()))
    args: dict[str, Any] = {}
    for i, arg in enumerate(node.args):
        if i >= len(order):
            raise ValueError(f"{call!r}: positional argument {i} has no parameter name")
        args[order[i]] = ast.literal_eval(arg)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{call!r}: **kwargs are not supported")
        args[kw.arg] = ast.literal_eval(kw.value)
    return name, args


def param_order(functions: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """``{function: [parameter names in doc order]}``."""
    return {str(f["name"]): list(f.get("parameters", {}).get("properties", {})) for f in functions}


CORRUPTIONS = ("drop_argument", "rename_tool")


def corrupt(
    calls: list[list[tuple[str, dict[str, Any]]]], how: str | None
) -> list[list[tuple[str, dict[str, Any]]]]:
    """The oracle's calls with one fault, to prove a converter notices: ``drop_argument``
    removes the first argument of the first call that has one, ``rename_tool`` renames
    the first call's function. Cases without such a call are left as they are."""
    if how is None:
        return calls
    if how not in CORRUPTIONS:
        raise ValueError(f"unknown corruption {how!r} (one of {', '.join(CORRUPTIONS)})")
    out = [list(turn) for turn in calls]
    for turn in out:
        for i, (name, args) in enumerate(turn):
            if how == "rename_tool":
                turn[i] = (f"{name}_renamed", args)
                return out
            if args:
                first = next(iter(args))
                turn[i] = (name, {k: v for k, v in args.items() if k != first})
                return out
    return out


def oracle_calls(case: BfclCase) -> list[list[tuple[str, dict[str, Any]]]]:
    """The oracle's calls per turn, with BFCL function names (one turn for single-turn cases).

    Single-turn AST: the first possible answer of each expected call. Relevance: a
    call of the first function with its required parameters (any call scores).
    Irrelevance: no call. Multi-turn: the ground-truth call strings, parsed.
    """
    if case.multi_turn:
        order = param_order(case.functions_at(len(case.turns))) | case.signatures
        return [[parse_call(c, order) for c in turn] for turn in case.ground_truth]
    if case.expects_no_call:
        return [[]]
    if case.category == "live_relevance":
        doc = case.functions[0]
        required = doc.get("parameters", {}).get("required", [])
        return [[(str(doc["name"]), {p: _placeholder(doc, p) for p in required})]]
    calls = []
    docs = {str(f["name"]): f for f in case.functions}
    for expected in case.ground_truth:
        (name, possible), *_ = expected.items()
        params = docs.get(str(name), {}).get("parameters", {})
        args = pick_answer(possible, params.get("required", []))
        if case.language != "Python":  # Java/JavaScript arguments travel as source literals
            props = docs.get(str(name), {}).get("parameters", {}).get("properties", {})
            args = {k: source_literal(v, props.get(k, {}), case.language) for k, v in args.items()}
        calls.append((str(name), args))
    return [calls]


def source_literal(value: Any, spec: Mapping[str, Any], language: str) -> Any:
    """A Java or JavaScript argument as the source text BFCL expects from a model
    (``5L`` for a Java long, ``new String[]{...}`` for an array, ``12n`` for a BigInt);
    strings are kept as they are, as BFCL's possible answers give them."""
    if isinstance(value, str):
        return value
    kind = str(spec.get("type", "any"))
    nested = (
        str(spec.get("items", {}).get("type", "")) if isinstance(spec.get("items"), dict) else ""
    )
    if language == "Java":
        return _java(value, kind, nested)
    return _javascript(value, kind)


def _java(value: Any, kind: str, nested: str = "") -> str:
    if isinstance(value, bool) or kind == "boolean":
        return "true" if value else "false"
    if kind == "long":
        return f"{int(value)}L"
    if kind == "float":
        return f"{float(value)!r}f"
    if kind == "double":
        return repr(float(value))
    if kind in ("byte", "short", "integer"):
        return str(int(value))
    if kind == "Array" and isinstance(value, list):
        elements = ", ".join(_java_element(x, nested, quote=not nested) for x in value)
        return f"new {nested or 'Object'}[]{{{elements}}}"
    if kind == "ArrayList" and isinstance(value, list):
        if not value:
            return "new ArrayList<>()"
        elements = ", ".join(
            _java_element(x, nested, quote=nested in ("", "String")) for x in value
        )
        return f"new ArrayList<>(Arrays.asList({elements}))"
    if kind == "HashMap" and isinstance(value, dict):
        puts = " ".join(
            f'put("{k}", {_java_element(v, "", quote=True)});' for k, v in value.items()
        )
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return str(value)


def _java_element(value: Any, nested: str, *, quote: bool) -> str:
    if isinstance(value, str):
        return f'"{value}"' if quote else value
    return _java(value, nested or ("double" if isinstance(value, float) else "integer"))


def _javascript(value: Any, kind: str) -> str:
    if isinstance(value, bool) or kind == "Boolean":
        return "true" if value else "false"
    if kind == "Bigint":
        return f"{int(value)}n"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return json.dumps(value)


def _placeholder(doc: Mapping[str, Any], param: str) -> Any:
    spec = doc.get("parameters", {}).get("properties", {}).get(param, {})
    if "enum" in spec and spec["enum"]:
        return spec["enum"][0]
    if "default" in spec:
        return spec["default"]
    return {
        "integer": 1,
        "float": 1.0,
        "number": 1.0,
        "boolean": True,
        "array": [],
        "dict": {},
    }.get(str(spec.get("type", "string")), "x")


def oracle_task(case: BfclCase, turn: int = 0, *, corruption: str | None = None) -> Task:
    """``turn`` of ``case`` as an awm :class:`Task` whose reference solution is the oracle's.

    awm's own :class:`awm_core.episode.ReferencePolicy` replays it through the
    episode loop, so the oracle meets exactly the path a model's calls take.
    """
    calls = corrupt(oracle_calls(case), corruption)[turn]
    names = {v: k for k, v in case.name_map().items()}
    steps = [ToolCallStep(tool=names.get(n, tool_name(n)), arguments=a) for n, a in calls]
    total = sum(len(t) for t in oracle_calls(case))
    return Task(
        id=f"{case.id}#{turn}" if case.multi_turn else case.id,
        instruction=render_turn(case, turn),
        complexity=complexity_for_calls(total) if total else Complexity.EASY,
        reference_solution=steps,
        reference_answer=IRRELEVANT_ANSWER if not calls else "Done.",
        expects_refusal=not calls,
        tags=["bfcl", case.category],
    )


def render_turn(case: BfclCase, turn: int, history: Sequence[tuple[str, str]] = ()) -> str:
    """The instruction of one turn: earlier turns (user request, final answer) then this one."""
    lines: list[str] = []
    if history:
        lines.append("Earlier in this conversation:")
        for request, answer in history:
            lines.append(f"User: {request}")
            lines.append(f"Assistant: {answer}")
        lines.append("")
        lines.append("Now the user says:")
    for message in case.turn_messages(turn):
        role = str(message.get("role", "user"))
        content = str(message.get("content", ""))
        lines.append(content if role == "user" else f"[{role}] {content}")
    text = "\n".join(lines).strip()
    return text or ADDITIONAL_FUNCTION_PROMPT


# --------------------------------------------------------------------------- subset and score


def subset(ids: Sequence[str], n: int | None, *, seed: str = "awm") -> list[str]:
    """A deterministic, spread-out sample of ``n`` ids (all of them when ``n`` is None)."""
    if n is None or n >= len(ids):
        return list(ids)
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    keep = set(ranked[:n])
    return [i for i in ids if i in keep]


@dataclass(frozen=True)
class CategoryScore:
    """Accuracy of one category: ``correct`` of ``total`` cases."""

    correct: int
    total: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.total if self.total else 0.0


def overall(scores: Mapping[str, CategoryScore]) -> dict[str, float]:
    """The v3 summary as bfcl-eval's leaderboard computes it.

    non-live: the unweighted mean of simple (itself the mean of Python, Java and
    JavaScript simple), multiple, parallel, parallel-multiple and irrelevance;
    live: the count-weighted mean of the six live categories; multi-turn: the
    unweighted mean of its four; overall: the unweighted mean of those three.
    Missing categories count 0, as in bfcl-eval. Accuracies in [0, 1].
    """

    def acc(cat: str) -> float:
        s = scores.get(cat)
        return s.accuracy if s else 0.0

    simple = (acc("simple") + acc("java") + acc("javascript")) / 3
    non_live = (
        simple + acc("multiple") + acc("parallel") + acc("parallel_multiple") + acc("irrelevance")
    ) / 5
    live_total = sum(scores[c].total for c in LIVE if c in scores)
    live = sum(scores[c].correct for c in LIVE if c in scores) / live_total if live_total else 0.0
    multi_turn = sum(acc(c) for c in MULTI_TURN) / len(MULTI_TURN)
    return {
        "overall": (non_live + live + multi_turn) / 3,
        "non_live": non_live,
        "live": live,
        "multi_turn": multi_turn,
    }
