"""Reward functions: the paper's defaults, the others, and composition by expression."""

from __future__ import annotations

import pytest

from awm_core import get_reward_function
from awm_core.hookspecs import hookimpl
from awm_core.models import (
    Message,
    Reward,
    StepRecord,
    Termination,
    Trajectory,
    Verdict,
    VerdictLabel,
)
from awm_verify.rewards import RewardSpecError, WeightedSum, compose, parse_terms, resolve_reward


def verdict(label: VerdictLabel) -> Verdict:
    return Verdict(label=label)


def traj(
    termination: Termination = Termination.FINAL_ANSWER, violation: str | None = None
) -> Trajectory:
    step = StepRecord(index=0, assistant=Message(role="assistant"), violation=violation)
    return Trajectory(env_id="e", task_id="t", termination=termination, steps=[step])


@pytest.mark.parametrize(
    ("label", "value"),
    [
        (VerdictLabel.COMPLETED, 1.0),
        (VerdictLabel.PARTIALLY_COMPLETED, 0.1),
        (VerdictLabel.AGENT_ERROR, 0.0),
        (VerdictLabel.ENVIRONMENT_ERROR, 0.0),
    ],
)
def test_default_reward_maps_labels_like_the_paper(label, value):
    assert get_reward_function("default")(verdict(label), traj()).value == value


def test_format_error_ending_is_minus_one_whatever_the_verdict():
    r = get_reward_function("default")(
        verdict(VerdictLabel.COMPLETED), traj(Termination.FORMAT_ERROR)
    )
    assert r.value == -1.0


def test_environment_error_ending_is_zero():
    r = get_reward_function("default")(
        verdict(VerdictLabel.COMPLETED), traj(Termination.ENVIRONMENT_ERROR)
    )
    assert r.value == 0.0


def test_no_verdict_is_zero():
    assert get_reward_function("default")(None, traj()).value == 0.0


def test_binary_and_partial_credit():
    assert (
        get_reward_function("binary")(verdict(VerdictLabel.PARTIALLY_COMPLETED), traj()).value
        == 0.0
    )
    assert get_reward_function("binary")(verdict(VerdictLabel.COMPLETED), traj()).value == 1.0
    assert (
        get_reward_function("partial_credit")(
            verdict(VerdictLabel.PARTIALLY_COMPLETED), traj()
        ).value
        == 0.5
    )


def test_format_reward_sees_step_violations():
    assert get_reward_function("format")(None, traj()).value == 1.0
    assert get_reward_function("format")(None, traj(violation="malformed_json")).value == 0.0


def test_compose_adds_weighted_terms_and_reports_components():
    fn = resolve_reward("default+0.1*format")
    r = fn(verdict(VerdictLabel.PARTIALLY_COMPLETED), traj())
    assert r.value == pytest.approx(0.2)
    assert r.components == {"default": pytest.approx(0.1), "0.1*format": pytest.approx(0.1)}


def test_compose_with_subtraction_and_spaces():
    fn = compose(" default - 0.5 * format_penalty ")
    r = fn(verdict(VerdictLabel.COMPLETED), traj(Termination.FORMAT_ERROR))
    assert r.value == pytest.approx(-1.0 + 0.5)
    assert isinstance(fn, WeightedSum) and fn.spec == "default-0.5*format_penalty"


def test_parse_terms():
    assert parse_terms("default+0.1*format") == [(1.0, "default"), (0.1, "format")]
    assert parse_terms("-binary+.5*format") == [(-1.0, "binary"), (0.5, "format")]


@pytest.mark.parametrize("spec", ["", "default+", "0.1*", "default format", "default+*format"])
def test_malformed_expressions_are_typed_errors(spec):
    with pytest.raises(RewardSpecError):
        compose(spec)


def test_unknown_name_in_expression_lists_the_known_ones():
    with pytest.raises(RewardSpecError, match="known: .*default"):
        compose("default+0.1*nope")


def test_plugin_reward_functions_compose_too(register_plugin):
    class Plugin:
        @hookimpl
        def register_reward_functions(self, register):
            register("length", lambda v, t: Reward(value=float(len(t.steps))))

    register_plugin(Plugin())
    assert (
        resolve_reward("0.5*length+default")(verdict(VerdictLabel.COMPLETED), traj()).value == 1.5
    )
