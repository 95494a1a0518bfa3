"""One rollout, verified: an instance from a pool, the episode loop, the verdict and reward.

Evaluation (awm-bench) and training (awm-train) both roll out through this one
function, so a policy is scored the same way in both; neither has a loop of
its own (the loop is :func:`awm_core.episode.run_episode`). The instance goes
back to the pool (reset) before verification starts, and the time spent in the
environment, the model and verification is measured for each rollout.
"""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field

from awm_core.contracts import CODE_JUDGE, Judge, UserSimulator
from awm_core.episode import ActingPolicy, EpisodeSettings, run_episode
from awm_core.models import Task, Trajectory
from awm_core.session import EnvInstance, InstancePool
from awm_envs.verifiers.pool import VerifierPool
from awm_verify.judge import JudgeError
from awm_verify.rewards import RewardFn
from awm_verify.verify import VerificationReport, verify_episode

__all__ = ["Rollout", "rollout_episode", "verify_rollout"]


@dataclass
class Rollout:
    """A finished, verified rollout; ``report`` is None when the judge could not decide."""

    task: Task
    trajectory: Trajectory
    report: VerificationReport | None
    judge_error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """The reward; 0 when the judge failed (an environment-side problem, not the agent's)."""
        return self.report.reward.value if self.report is not None else 0.0

    @property
    def label(self) -> str:
        return self.report.verdict.label.value if self.report is not None else "Environment Error"


async def rollout_episode(
    instances: InstancePool | EnvInstance,
    task: Task,
    policy: ActingPolicy,
    *,
    env_id: str,
    initial: bytes | None,
    judge: Judge | str = CODE_JUDGE,
    reward: RewardFn | str = "default",
    settings: EpisodeSettings = EpisodeSettings(),
    verifier_source: str | None = None,
    verifier_pool: VerifierPool | None = None,
    user: UserSimulator | None = None,
) -> Rollout:
    """Roll ``task`` out on a fresh instance of ``instances`` and verify it.

    ``instances`` is a pool (the instance goes back, reset, before verification) or
    one instance the caller holds and keeps (a benchmark's own session).
    ``env_id`` is recorded in the trajectory; ``initial`` is the database the
    instance starts from (the environment's template), None when it has none
    (then the instance's ``snapshot()`` is None too, and the judge decides alone).

    ``user`` plays a conversational task's user (default: the ``scripted`` simulator).

    ``timings``: ``model_s`` (the policy's turns), ``env_s`` (tool calls and
    ``list_tools``), ``verify_s`` (diff, verifier, judge), ``total_s``.
    """
    started = time.perf_counter()
    held: AbstractAsyncContextManager[EnvInstance] = (
        nullcontext(instances) if isinstance(instances, EnvInstance) else instances.instance()
    )
    async with held as inst:
        trajectory = await run_episode(
            policy, inst, task, settings=settings, env_id=env_id, user=user
        )
        final = await inst.snapshot()
    return await verify_rollout(
        task,
        trajectory,
        initial=initial,
        final=final,
        judge=judge,
        reward=reward,
        verifier_source=verifier_source,
        verifier_pool=verifier_pool,
        started=started,
    )


async def verify_rollout(
    task: Task,
    trajectory: Trajectory,
    *,
    initial: bytes | None,
    final: bytes | None,
    judge: Judge | str = CODE_JUDGE,
    reward: RewardFn | str = "default",
    verifier_source: str | None = None,
    verifier_pool: VerifierPool | None = None,
    started: float | None = None,
) -> Rollout:
    """Verify a finished trajectory against its instance's final database; the one scorer.

    With no database (``initial`` or ``final`` None) there is no diff and no verifier
    run: the report says so and the judge decides. ``started`` (a ``time.perf_counter()`` value) dates ``total_s``; a judge that
    cannot decide gives ``report=None`` (reward 0) instead of raising.
    """
    verify_started = time.perf_counter()
    report: VerificationReport | None = None
    judge_error: str | None = None
    try:
        report = await verify_episode(
            task,
            trajectory,
            initial=initial,
            final=final,
            verifier_source=verifier_source if task.verifier else None,
            judge=judge,
            reward=reward,
            pool=verifier_pool,
        )
    except JudgeError as exc:
        judge_error = str(exc)
    done = time.perf_counter()
    timings = {
        "model_s": sum(s.model_latency_s for s in trajectory.steps),
        "env_s": sum(s.result.latency_s for s in trajectory.steps if s.result is not None),
        "verify_s": done - verify_started,
        "total_s": done - (started if started is not None else verify_started),
    }
    return Rollout(task, trajectory, report, judge_error, timings)
