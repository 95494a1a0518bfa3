"""One training rollout: awm's verified rollout plus one token-level row per assistant turn.

History-aware training (the paper's section on it): each assistant turn is
trained on the context the model actually saw at that turn, the truncated
history, not on a concatenation of the whole episode. So a trajectory of *k*
turns becomes *k* rows; every row carries the trajectory's one reward (GRPO
gives them one advantage). Environment failures score 0 and never raise: in
verl a raise drops the whole GRPO group.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_core.contracts import CODE_JUDGE, Judge, UserSimulator
from awm_core.episode import EpisodeSettings, StepChecks
from awm_core.models import Task, Termination
from awm_core.session import InstancePool
from awm_train.policy import TokenPolicy, TokenTurn
from awm_verify import Rollout, rollout_episode

if TYPE_CHECKING:
    from awm_envs import Environment, SimulatedEnvironment

__all__ = ["TRAINING_SETTINGS", "TrainingEpisode", "TurnRow", "run_training_episode"]

log = logging.getLogger(__name__)

TRAINING_SETTINGS = EpisodeSettings(checks=StepChecks.paper())
"""The episode settings of training: every step-level check on, as in the paper's RL recipe."""


@dataclass(frozen=True)
class TurnRow:
    """One training row: prompt (no loss), response (loss on every token), the episode's reward."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    log_probs: list[float] | None
    reward: float
    turn: int
    turns: int


@dataclass
class TrainingEpisode:
    """A verified rollout, its rows, and the per-trajectory metrics a trainer logs."""

    rollout: Rollout | None
    rows: list[TurnRow]
    reward: float
    metrics: dict[str, Any] = field(default_factory=dict)


def rows_from_turns(turns: list[TokenTurn], reward: float) -> list[TurnRow]:
    """One row per turn; the response mask is all ones (a turn's tokens are all the model's)."""
    return [
        TurnRow(
            prompt_ids=list(t.prompt_ids),
            response_ids=list(t.response_ids),
            response_mask=[1] * len(t.response_ids),
            log_probs=list(t.log_probs) if t.log_probs is not None else None,
            reward=reward,
            turn=i,
            turns=len(turns),
        )
        for i, t in enumerate(turns)
    ]


def _metrics(rollout: Rollout, policy: TokenPolicy) -> dict[str, Any]:
    traj = rollout.trajectory
    calls = [s for s in traj.steps if s.tool_call is not None and s.tool_call.name == "call_tool"]
    env_s = rollout.timings.get("env_s", 0.0)
    verify_s = rollout.timings.get("verify_s", 0.0)
    generate_s = sum(t.generate_s for t in policy.turns)
    total = env_s + verify_s + generate_s
    return {
        "turns": len(traj.steps),
        "tool_calls": len(calls),
        "tool_errors": sum(1 for s in calls if s.result is not None and s.result.is_error),
        "env_errors": int(traj.termination == Termination.ENVIRONMENT_ERROR),
        "format_error": int(traj.termination == Termination.FORMAT_ERROR),
        "termination": traj.termination.value,
        # which step check ended it (unknown_tool, malformed_json, ...), None if none did
        "violation": next((s.violation for s in reversed(traj.steps) if s.violation), None),
        "verdict": rollout.label,
        "reward": rollout.reward,
        "generate_s": generate_s,
        "env_s": env_s,
        "verify_s": verify_s,
        "env_overhead_share": (env_s + verify_s) / total if total > 0 else 0.0,
        "response_tokens": sum(len(t.response_ids) for t in policy.turns),
    }


async def run_training_episode(
    pool: InstancePool,
    environment: Environment | SimulatedEnvironment,
    task: Task,
    policy: TokenPolicy,
    *,
    judge: Judge | str = CODE_JUDGE,
    reward: str = "default",
    settings: EpisodeSettings = TRAINING_SETTINGS,
    verifier_source: str | None = None,
    user: UserSimulator | None = None,
) -> TrainingEpisode:
    """Roll out, verify and reward ``task``; rows for every turn the policy generated.

    ``settings`` default to :data:`TRAINING_SETTINGS`, the paper's RL recipe
    (:meth:`StepChecks.paper`): a format violation ends the rollout with reward -1. Anything the environment or the
    verifier throws becomes reward 0 with ``metrics["env_errors"] = 1``. ``user`` plays a
    conversational task's user (default: the ``scripted`` one); its replies reach the policy
    as observations in later prompts, never as trained tokens.
    """
    try:
        rollout = await rollout_episode(
            pool,
            task,
            policy,
            env_id=environment.id,
            initial=environment.template,
            judge=judge,
            reward=reward,
            settings=settings,
            verifier_source=verifier_source,
            user=user,
        )
    except Exception as exc:  # a raise would drop the trajectory's whole group in the trainer
        log.warning("rollout of %s/%s failed: %s: %s", environment.id, task.id, type(exc), exc)
        rows = rows_from_turns(policy.turns, 0.0)
        metrics = {"env_errors": 1, "reward": 0.0, "turns": len(policy.turns), "error": str(exc)}
        return TrainingEpisode(None, rows, 0.0, metrics)
    value = rollout.reward
    return TrainingEpisode(
        rollout, rows_from_turns(policy.turns, value), value, _metrics(rollout, policy)
    )
