"""One training rollout: awm's verified rollout plus one token-level row per assistant turn.

History-aware training (the paper's section on it): each assistant turn is
trained on the context the model actually saw at that turn, the truncated
history, not on a concatenation of the whole episode. So a trajectory of *k*
turns becomes *k* rows; every row carries the trajectory's one reward (GRPO
gives them one advantage). Environment failures score 0 and never raise: in
verl a raise drops the whole GRPO group.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_core.contracts import CODE_JUDGE, Judge, UserSimulator
from awm_core.episode import EpisodeSettings, StepChecks
from awm_core.models import Task, Termination
from awm_core.session import InstancePool
from awm_train.policy import TokenPolicy, TokenTurn
from awm_train.safety import EnvSafety, PoolReplay, safe_reward
from awm_verify import Rollout, rollout_episode

if TYPE_CHECKING:
    from awm_core.perturbation import Replay
    from awm_envs import Environment, SimulatedEnvironment
    from awm_envs.perturb import SafetyCheck

__all__ = [
    "TRAINING_SETTINGS",
    "TrainingEpisode",
    "TurnRow",
    "row_perturbation",
    "run_training_episode",
]

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
    safety: SafetyCheck | None = None  # what the episode did that it should not have


def row_perturbation(extra_info: Mapping[str, Any]) -> tuple[str | None, int]:
    """The perturbation a prepared row names and its episode seed (``(None, 0)``: none).

    ``awm train prepare`` writes both fields into every row's ``extra_info``; rows
    prepared before perturbations existed have neither and run unperturbed.
    """
    name = str(extra_info.get("perturbation") or "") or None
    return name, int(extra_info.get("perturbation_seed") or 0) if name else 0


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
    safety: EnvSafety | None = None,
    perturbation: str | None = None,
    perturbation_seed: int = 0,
) -> TrainingEpisode:
    """Roll out, verify and reward ``task``; rows for every turn the policy generated.

    ``settings`` default to :data:`TRAINING_SETTINGS`, the paper's RL recipe
    (:meth:`StepChecks.paper`): a format violation ends the rollout with reward -1. Anything the environment or the
    verifier throws becomes reward 0 with ``metrics["env_errors"] = 1``. ``user`` plays a
    conversational task's user (default: the ``scripted`` one); its replies reach the policy
    as observations in later prompts, never as trained tokens.

    With ``safety`` (the environment's :class:`~awm_train.safety.EnvSafety`; an executable
    environment only) the episode runs under ``perturbation`` (a registered name, planned
    at ``perturbation_seed``; None runs the environment as it is, still recording what
    each call read), and its reward follows :func:`~awm_train.safety.safe_reward`: -1 for
    an injection goal reached, another principal's row read or changed, or an
    unconfirmed irreversible call. The plan's record goes into the trajectory's
    ``metadata["perturbation"]``, the verdicts into ``metadata["safety"]``.
    """
    if safety is None and perturbation:
        raise ValueError("a perturbed episode needs the environment's EnvSafety")
    check: SafetyCheck | None = None
    try:
        if safety is None:
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
        else:
            rollout, check = await _guarded_rollout(
                pool,
                environment,
                task,
                policy,
                safety,
                perturbation,
                perturbation_seed,
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
    value, violations = safe_reward(rollout.reward, check)
    metrics = _metrics(rollout, policy)
    metrics["reward"] = value
    if safety is not None:
        metrics.update(_safety_metrics(rollout, check, violations))
    return TrainingEpisode(rollout, rows_from_turns(policy.turns, value), value, metrics, check)


def _safety_metrics(
    rollout: Rollout, check: SafetyCheck | None, violations: list[str]
) -> dict[str, Any]:
    """The numbers verl logs per trajectory (``reward_extra_info``), and what was violated."""
    plan = rollout.trajectory.metadata.get("perturbation") or {}
    return {
        "perturbed": int(bool(plan.get("name")) and not plan.get("skipped")),
        "task_reward": rollout.reward,
        "attack_goal_reached": int(check is not None and check.goal_reached),
        "unauthorized_access": int(check is not None and check.unauthorized),
        "unconfirmed_irreversible": int(bool(check is not None and check.unconfirmed_irreversible)),
        "safety_violation": int(bool(violations)),
        "violations": violations,
    }


async def _guarded_rollout(
    pool: InstancePool,
    environment: Environment | SimulatedEnvironment,
    task: Task,
    policy: TokenPolicy,
    safety: EnvSafety,
    perturbation: str | None,
    seed: int,
    **verify: Any,
) -> tuple[Rollout, SafetyCheck]:
    """The rollout on a pool instance with the plan in force, then the safety verdicts
    (awm_envs.perturb decides them, as for ``awm bench safety``)."""
    from awm_envs.perturb import check_safety

    if safety.trusted:
        replay: Replay = safety.replay
        plan = safety.plan(task, perturbation, seed)
    else:  # the bundle's code runs only in the pool's sandbox: replay goals there too
        replay = sandboxed = PoolReplay(pool, asyncio.get_running_loop())
        try:
            plan = await asyncio.to_thread(safety.plan, task, perturbation, seed, replay)
        finally:
            await sandboxed.aclose()  # one instance at a time: a pool of 1 never deadlocks
    async with pool.instance() as inst:
        wrapped = plan.wrap(inst)
        await wrapped.start()
        rollout = await rollout_episode(
            wrapped, task, policy, env_id=environment.id, initial=plan.initial, **verify
        )
        final = await wrapped.snapshot()  # the episode's end: verification changes nothing
    judge_safety = functools.partial(
        check_safety,
        plan,
        task,
        rollout.trajectory,
        final=final,
        principals=safety.principals,
        replay=replay,
        reads=wrapped.reads,
    )
    if safety.trusted:
        check = judge_safety()
    else:
        try:
            check = await asyncio.to_thread(judge_safety)
        finally:
            await sandboxed.aclose()
    rollout.trajectory.metadata["perturbation"] = plan.to_json()
    rollout.trajectory.metadata["safety"] = {**check.to_json(), "reads": wrapped.reads}
    return rollout, check
