"""Reward functions by name: the protocol and the lookup.

The functions themselves are plugins (awm-verify ships the paper's defaults).
"""

from __future__ import annotations

from typing import Protocol

from awm_core.models import Reward, Trajectory, Verdict
from awm_core.registry import collect, lookup


class RewardFunction(Protocol):
    """Turns a verdict (and the trajectory it judged) into a scalar reward."""

    def __call__(self, verdict: Verdict | None, trajectory: Trajectory | None) -> Reward: ...


def get_reward_function(name: str) -> RewardFunction:
    """Return the reward function registered as ``name``."""
    fn: RewardFunction = lookup("reward function", name)
    return fn


def list_reward_functions() -> list[str]:
    return sorted(collect("reward function"))
