"""One rollout, verified: an instance from a pool, the episode loop, the verdict and reward.

Evaluation (awm-bench) and training (awm-train) both roll out through this one
function, so a policy is scored the same way in both; neither has a loop of
its own (the loop is :func:`awm_core.episode.run_episode`). The instance goes
back to the pool (reset) before verification starts, and the time spent in the
environment, the model and verification is measured for each rollout.
"""

from __future__ import annotations

import inspect
import time
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from awm_core.contracts import Judge
from awm_core.episode import ActingPolicy, StepChecks, run_episode
from awm_core.history import DEFAULT_WINDOW
from awm_core.models import Task, Trajectory
from awm_verify.judge import JudgeError
from awm_verify.rewards import RewardFn
from awm_verify.sandbox import VerifierPool
from awm_verify.verify import VerificationReport, verify_episode

__all__ = ["InstancePool", "Rollout", "RolloutEnvironment", "rollout_episode", "verify_rollout"]


class InstancePool(Protocol):
    """Hands out fresh instances: ``awm_envs.EnvPool``, or a simulated environment's pool."""

    def instance(self) -> AbstractAsyncContextManager[Any]: ...


class RolloutEnvironment(Protocol):
    """What a rollout reads of its environment: the id and the initial database image."""

    @property
    def id(self) -> str: ...

    @property
    def template(self) -> bytes: ...


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


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def rollout_episode(
    pool: InstancePool,
    environment: RolloutEnvironment,
    task: Task,
    policy: ActingPolicy,
    *,
    judge: Judge | str = "code",
    reward: RewardFn | str = "default",
    max_steps: int = 20,
    checks: StepChecks | None = None,
    history_window: int | None = DEFAULT_WINDOW,
    verifier_source: str | None = None,
    verifier_pool: VerifierPool | None = None,
) -> Rollout:
    """Roll ``task`` out on a fresh instance of ``pool`` and verify it.

    ``timings``: ``model_s`` (the policy's turns), ``env_s`` (tool calls and
    ``list_tools``), ``verify_s`` (diff, verifier, judge), ``total_s``.
    """
    started = time.perf_counter()
    async with pool.instance() as inst:
        trajectory = await run_episode(
            policy,
            inst,
            task,
            max_steps=max_steps,
            checks=checks,
            history_window=history_window,
            env_id=environment.id,
        )
        final = await _maybe(inst.snapshot())
    return await verify_rollout(
        task,
        trajectory,
        initial=environment.template,
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
    initial: bytes,
    final: bytes,
    judge: Judge | str = "code",
    reward: RewardFn | str = "default",
    verifier_source: str | None = None,
    verifier_pool: VerifierPool | None = None,
    started: float | None = None,
) -> Rollout:
    """Verify a finished trajectory against its instance's final database; the one scorer.

    ``started`` (a ``time.perf_counter()`` value) dates ``total_s``; a judge that
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
