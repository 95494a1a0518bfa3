"""Reward functions by name: the protocol and the lookup.

The functions themselves are plugins (awm-verify ships the paper's defaults).
"""

from __future__ import annotations

from awm_core.contracts import RewardFunction
from awm_core.registry import REWARD_FUNCTIONS, collect, lookup


def get_reward_function(name: str) -> RewardFunction:
    """Return the reward function registered as ``name``."""
    fn: RewardFunction = lookup(REWARD_FUNCTIONS, name)
    return fn


__all__ = ["RewardFunction", "get_reward_function", "list_reward_functions"]


def list_reward_functions() -> list[str]:
    return sorted(collect(REWARD_FUNCTIONS))
