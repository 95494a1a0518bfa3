"""τ²-bench converter logic that needs no tau2: the oracle's script, the oracle user, pass^k."""

from __future__ import annotations

import pytest

from awm_bench.tau2.cases import (
    GREETING_REPLY,
    STOP,
    GoldenAction,
    agent_script,
    closing_message,
    corrupt_script,
    golden_actions,
    oracle_user_turn,
    pass_hat_k,
    user_groups,
)

ACTIONS = golden_actions(
    [
        {"name": "get_user", "arguments": {"user_id": "u1"}},
        {"name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"},
        {"name": "reboot_device", "arguments": {}, "requestor": "user"},
        {"name": "refuel_data", "arguments": {"gb": 2}},
        {"name": "check_status", "arguments": {}, "requestor": "user"},
    ]
)


def test_the_agent_script_makes_its_calls_and_asks_once_per_run_of_user_actions() -> None:
    script = agent_script(ACTIONS, ["2 GB"])
    assert [(s.kind, s.name) for s in script] == [
        ("call", "get_user"),
        ("say", ""),
        ("call", "refuel_data"),
        ("say", ""),
        ("say", ""),
    ]
    assert "2 GB" in script[-1].text


def test_user_actions_are_grouped_in_runs() -> None:
    groups = user_groups(ACTIONS)
    assert [[a.name for a in g] for g in groups] == [
        ["toggle_airplane_mode", "reboot_device"],
        ["check_status"],
    ]


def test_the_oracle_user_answers_the_greeting_acts_on_each_request_then_stops() -> None:
    groups = user_groups(ACTIONS)
    assert oracle_user_turn(1, False, groups).text == GREETING_REPLY
    assert [a.name for a in oracle_user_turn(2, False, groups).calls] == [
        "toggle_airplane_mode",
        "reboot_device",
    ]
    assert oracle_user_turn(2, True, groups).text  # after its tools ran: a text reply
    assert [a.name for a in oracle_user_turn(3, False, groups).calls] == ["check_status"]
    assert oracle_user_turn(4, False, groups).text == STOP


def test_a_task_without_user_actions_ends_after_the_closing_message() -> None:
    actions = [GoldenAction("cancel", {"id": 1})]
    assert oracle_user_turn(2, False, user_groups(actions)).text == STOP
    assert agent_script(actions)[-1].text == closing_message([])


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"), [(4, 4, 2, 1.0), (4, 2, 1, 0.5), (4, 2, 2, 1 / 6)]
)
def test_pass_hat_k_is_the_chance_that_k_drawn_trials_all_pass(
    n: int, c: int, k: int, expected: float
) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_pass_hat_k_needs_k_trials() -> None:
    with pytest.raises(ValueError):
        pass_hat_k(1, 1, 2)


def test_a_corrupted_script_renames_or_drops_in_its_first_call() -> None:
    script = agent_script(ACTIONS)
    assert corrupt_script(script, "rename_tool")[0].name == "get_user_renamed"
    assert corrupt_script(script, "drop_argument")[0].arguments == {}
    assert corrupt_script(script, None) == script


def test_tau2_is_registered_through_the_awm_hook_even_without_tau2() -> None:
    from awm_core.contracts import Benchmark
    from awm_core.registry import get_benchmark

    suite = get_benchmark("tau2")
    assert isinstance(suite, Benchmark)
    missing = suite.available()
    if missing is not None:
        assert "awm-bench[tau2]" in missing
