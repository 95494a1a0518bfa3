"""BFCLv3 converter logic that needs no bfcl-eval: the oracle, name mapping, the v3 overall,
the judge's reading of a trajectory, and the plugin's registration."""

from __future__ import annotations

import json

import pytest

from awm_bench.bfcl.cases import (
    ADDITIONAL_FUNCTION_PROMPT,
    BfclCase,
    CategoryScore,
    corrupt,
    oracle_calls,
    oracle_task,
    overall,
    parse_call,
    pick_answer,
    render_turn,
    source_literal,
    subset,
    tool_name,
)
from awm_core.models import Message, StepRecord, ToolCall, Trajectory

FACTORIAL = {
    "name": "math.factorial",
    "description": "Factorial.",
    "parameters": {
        "type": "dict",
        "properties": {"number": {"type": "integer"}, "unit": {"type": "string"}},
        "required": ["number"],
    },
}


def simple_case() -> BfclCase:
    return BfclCase(
        id="simple_1",
        turns=[[{"role": "user", "content": "Factorial of 5?"}]],
        functions=[FACTORIAL],
        ground_truth=[{"math.factorial": {"number": [5], "unit": ["", "none"]}}],
    )


def multi_turn_case() -> BfclCase:
    sort_doc = {
        "name": "sort",
        "parameters": {"type": "dict", "properties": {"file_name": {"type": "string"}}},
    }
    cd_doc = {
        "name": "cd",
        "parameters": {"type": "dict", "properties": {"folder": {"type": "string"}}},
    }
    return BfclCase(
        id="multi_turn_miss_func_0",
        turns=[[{"role": "user", "content": "Go to docs."}], []],
        functions=[cd_doc],
        missed={1: [sort_doc]},
        ground_truth=[["cd(folder='docs')"], ["sort('a.pdf')"]],
    )


def test_an_optional_parameter_listed_as_empty_first_is_left_out() -> None:
    assert pick_answer({"number": [5], "unit": ["", "none"]}) == {"number": 5}


def test_a_required_parameter_takes_its_first_real_value_even_after_an_empty_option() -> None:
    assert pick_answer({"fuel": ["", 30]}, required=["fuel"]) == {"fuel": 30}


def test_nested_dicts_in_possible_answers_hold_option_lists_too() -> None:
    possible = {"filters": [{"color": ["red", "blue"], "size": ["", "M"]}]}
    assert pick_answer(possible) == {"filters": {"color": "red"}}


def test_positional_ground_truth_arguments_are_named_from_the_doc_order() -> None:
    order = {"sort": ["file_name"], "mv": ["source", "destination"]}
    assert parse_call("sort('a.pdf')", order) == ("sort", {"file_name": "a.pdf"})
    assert parse_call("mv('a', destination='b')", order) == (
        "mv",
        {"source": "a", "destination": "b"},
    )


def test_a_ground_truth_string_that_is_not_a_call_is_refused() -> None:
    with pytest.raises(ValueError, match="not a call"):
        parse_call("x = 1", {})


def test_bfcl_names_become_valid_awm_tool_names_and_map_back() -> None:
    case = simple_case()
    assert tool_name("math.factorial") == "math_factorial"
    assert case.name_map() == {"math_factorial": "math.factorial"}


def test_the_oracle_task_replays_the_ground_truth_under_awm_tool_names() -> None:
    task = oracle_task(simple_case())
    assert [(s.tool, s.arguments) for s in task.reference_solution or []] == [
        ("math_factorial", {"number": 5})
    ]
    assert not task.expects_refusal


def test_irrelevance_cases_have_an_oracle_that_calls_nothing() -> None:
    case = BfclCase(
        id="irrelevance_3", turns=[[{"role": "user", "content": "Hi"}]], functions=[FACTORIAL]
    )
    assert oracle_calls(case) == [[]]
    assert oracle_task(case).expects_refusal


def test_a_held_out_function_appears_only_from_its_turn_with_bfcls_prompt() -> None:
    case = multi_turn_case()
    assert [f["name"] for f in case.functions_at(0)] == ["cd"]
    assert [f["name"] for f in case.functions_at(1)] == ["cd", "sort"]
    assert render_turn(case, 1) == ADDITIONAL_FUNCTION_PROMPT
    assert oracle_calls(case) == [[("cd", {"folder": "docs"})], [("sort", {"file_name": "a.pdf"})]]


def test_later_turns_carry_the_conversation_so_far() -> None:
    text = render_turn(multi_turn_case(), 1, [("Go to docs.", "Done.")])
    assert "User: Go to docs." in text and "Assistant: Done." in text


@pytest.mark.parametrize(
    ("how", "expected"),
    [("drop_argument", [[("f", {"b": 2})]]), ("rename_tool", [[("f_renamed", {"a": 1, "b": 2})]])],
)
def test_a_corrupted_oracle_differs_from_the_oracle(how: str, expected: object) -> None:
    assert corrupt([[("f", {"a": 1, "b": 2})]], how) == expected


@pytest.mark.parametrize(
    ("value", "spec", "language", "literal"),
    [
        (5, {"type": "long"}, "Java", "5L"),
        (2.5, {"type": "float"}, "Java", "2.5f"),
        (True, {"type": "boolean"}, "Java", "true"),
        (["a", "b"], {"type": "Array", "items": {"type": "String"}}, "Java", "new String[]{a, b}"),
        (7, {"type": "Bigint"}, "JavaScript", "7n"),
        ({"k": [1]}, {"type": "dict"}, "JavaScript", '{"k": [1]}'),
        ("already text", {"type": "integer"}, "Java", "already text"),
    ],
)
def test_java_and_javascript_arguments_are_written_as_source_literals(
    value: object, spec: dict[str, object], language: str, literal: str
) -> None:
    assert source_literal(value, spec, language) == literal


def test_the_v3_overall_averages_non_live_live_and_multi_turn() -> None:
    scores = {c: CategoryScore(1, 1) for c in ("simple", "java", "javascript", "multiple")}
    scores |= {"parallel": CategoryScore(0, 1), "parallel_multiple": CategoryScore(1, 2)}
    scores |= {"irrelevance": CategoryScore(1, 1)}
    scores |= {"live_simple": CategoryScore(3, 4), "live_multiple": CategoryScore(0, 4)}
    scores |= {"multi_turn_base": CategoryScore(1, 2)}
    groups = overall(scores)
    assert groups["non_live"] == pytest.approx((1 + 1 + 0 + 0.5 + 1) / 5)
    assert groups["live"] == pytest.approx(3 / 8)  # weighted by count
    assert groups["multi_turn"] == pytest.approx(0.5 / 4)  # missing categories count 0
    assert groups["overall"] == pytest.approx(
        (groups["non_live"] + groups["live"] + groups["multi_turn"]) / 3
    )


def test_the_subset_is_deterministic_and_keeps_file_order() -> None:
    ids = [f"simple_{i}" for i in range(50)]
    picked = subset(ids, 5)
    assert picked == subset(ids, 5) and len(picked) == 5
    assert picked == sorted(picked, key=ids.index)


def test_the_judge_reads_call_tool_calls_back_under_bfcl_names() -> None:
    from awm_bench.bfcl.episode import calls_of

    def step(i: int, name: str, args: dict[str, object]) -> StepRecord:
        call = ToolCall(id=f"c{i}", name=name, arguments=args)
        return StepRecord(index=i, assistant=Message(role="assistant", content=""), tool_call=call)

    traj = Trajectory(
        env_id="bfcl/simple_1",
        task_id="simple_1",
        instruction="x",
        steps=[
            step(0, "list_tools", {}),
            step(1, "call_tool", {"tool_name": "math_factorial", "arguments": {"number": 5}}),
            step(2, "call_tool", {"tool_name": "other", "arguments": '{"a": 1}'}),
        ],
    )
    calls = calls_of(traj, simple_case().name_map())
    assert calls == [{"math.factorial": json.dumps({"number": 5})}, {"other": json.dumps({"a": 1})}]


def test_bfcl_is_registered_through_the_awm_hook_even_without_bfcl_eval() -> None:
    from awm_core.contracts import Benchmark
    from awm_core.registry import get_benchmark, list_benchmarks

    assert "bfcl" in list_benchmarks()
    suite = get_benchmark("bfcl")
    assert isinstance(suite, Benchmark)
    missing = suite.available()
    if missing is not None:  # this venv has no bfcl-eval: the message says what to install
        assert "awm-bench[bfcl]" in missing
