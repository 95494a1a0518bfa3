"""Verify an episode end to end: diff the states, run the verifier, judge, reward.

This is the one call a trainer or evaluator needs once a rollout is done::

    report = await verify_episode(task, trajectory, initial=env.template,
                                  final=instance.snapshot_sync(), verifier_source=source,
                                  judge=get_judge("code+llm", model="openai:gpt-4o"))
    report.reward.value

The diff and the sandboxed verifier run on worker threads, so an asyncio
trainer keeps rolling out while a batch is verified (``verify_many``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_core import get_judge
from awm_core.contracts import DEFAULT_JUDGE, Judge, JudgeRequest
from awm_core.dbdiff import DatabaseDiff, diff_images
from awm_core.models import (
    Reward,
    Task,
    Trajectory,
    Verdict,
    VerifierError,
    VerifierErrorKind,
    VerifierResult,
)
from awm_core.snapshot import DatabaseSource, load_image
from awm_envs.verifiers.pool import VerifierPool, default_pool
from awm_verify.judge import JudgeError
from awm_verify.rewards import RewardFn, resolve_reward


class VerificationReport(BaseModel):
    """Everything verification produced for one episode."""

    model_config = ConfigDict(extra="forbid")

    env_id: str
    task_id: str
    verdict: Verdict
    reward: Reward
    verification: VerifierResult | None = None
    diff: DatabaseDiff | None = Field(
        description="The database changes; None when the environment has no database"
    )

    def to_record(self) -> dict[str, Any]:
        """What a saved trajectory keeps of its verification, as ``metadata["verdict"]``.

        Everything a reader needs to see why an episode passed or failed without
        running it again (``awm view`` shows it): the label, reward and reasoning, the
        judge's evidence, the verifier's result and the database diff.
        """
        return {
            "label": self.verdict.label.value,
            "reward": self.reward.value,
            "reasoning": self.verdict.reasoning,
            "judge": self.verdict.judge,
            "evidence": self.verdict.evidence,
            "verification": (
                self.verification.model_dump(mode="json") if self.verification else None
            ),
            "diff": self.diff.model_dump(mode="json") if self.diff else None,
        }


@dataclass(frozen=True)
class Episode:
    """One finished rollout to verify: task, trajectory, both database states."""

    task: Task
    trajectory: Trajectory
    initial: DatabaseSource
    final: DatabaseSource
    verifier_source: str | None = None


async def verify_episode(
    task: Task,
    trajectory: Trajectory,
    *,
    initial: DatabaseSource | None,
    final: DatabaseSource | None,
    verifier_source: str | None = None,
    judge: Judge | str = DEFAULT_JUDGE,
    reward: RewardFn | str = "default",
    pool: VerifierPool | None = None,
) -> VerificationReport:
    """Diff, verify (when the task has verifier code), judge and reward one episode.

    An environment without a database (``initial`` or ``final`` None: a benchmark
    whose state lives in its own classes) has no diff, and its verifier is not run:
    the verification says so and the judge decides. Raises :class:`JudgeError` only
    when the judge cannot decide at all (no model, the model never answered usably);
    verifier failures are evidence, not errors.
    """
    judge_obj = get_judge(judge) if isinstance(judge, str) else judge
    reward_fn = resolve_reward(reward) if isinstance(reward, str) else reward
    diff: DatabaseDiff | None = None
    verification: VerifierResult | None = None
    if initial is None or final is None:
        verification = None if verifier_source is None else _not_run(task)
    else:
        before, after = load_image(initial), load_image(final)
        diff_task = asyncio.to_thread(diff_images, before, after)
        if verifier_source is not None:
            runner = pool or default_pool()
            diff, verification = await asyncio.gather(
                diff_task,
                runner.arun(
                    verifier_source,
                    initial=before,
                    final=after,
                    function=task.verifier,
                    final_answer=trajectory.final_answer,
                ),
            )
        else:
            diff = await diff_task
    if task.user is not None and verification is not None:
        verification = with_communication(task, trajectory, verification)
    verdict = await judge_obj.judge(JudgeRequest(task, trajectory, verification, diff))
    return VerificationReport(
        env_id=trajectory.env_id,
        task_id=task.id,
        verdict=verdict,
        reward=reward_fn(verdict, trajectory),
        verification=verification,
        diff=diff,
    )


def with_communication(
    task: Task, trajectory: Trajectory, verification: VerifierResult
) -> VerifierResult:
    """A conversational task's verification: the verifier's verdict and the communication
    checks of :mod:`awm_core.conversation` (facts told, nothing guessed, asked before acting),
    decided by code; both must hold. The checks' outcome is kept in the evidence, so a
    judge reading it (``code+llm``) sees which one failed."""
    from awm_core.conversation import check_communication, events_from_trajectory

    talk = check_communication(task, events_from_trajectory(trajectory))
    complete = verification.complete
    if complete is not None:
        complete = complete and talk.passed
    evidence = {**verification.evidence, "communication": talk.evidence()}
    return verification.model_copy(update={"complete": complete, "evidence": evidence})


def _not_run(task: Task) -> VerifierResult:
    return VerifierResult(
        function=task.verifier or "",
        signature="none",
        error=VerifierError(
            kind=VerifierErrorKind.INVALID,
            message="the environment has no database (its instance's snapshot() is None), "
            "so the verifier was not run; judge this environment with a judge that needs "
            "no verifier (llm, or the benchmark's own)",
        ),
    )


async def verify_many(
    episodes: Sequence[Episode],
    *,
    judge: Judge | str = DEFAULT_JUDGE,
    reward: RewardFn | str = "default",
    pool: VerifierPool | None = None,
    return_exceptions: bool = False,
) -> list[VerificationReport | JudgeError]:
    """Verify a batch concurrently; results in order.

    Concurrency is bounded where the cost is: the pool's worker count for
    verifiers, the judge's semaphore for model calls. With ``return_exceptions``
    an episode whose judge failed yields its :class:`JudgeError` in place.
    """
    judge_obj = get_judge(judge) if isinstance(judge, str) else judge
    reward_fn = resolve_reward(reward) if isinstance(reward, str) else reward
    results = await asyncio.gather(
        *(
            verify_episode(
                e.task,
                e.trajectory,
                initial=e.initial,
                final=e.final,
                verifier_source=e.verifier_source,
                judge=judge_obj,
                reward=reward_fn,
                pool=pool,
            )
            for e in episodes
        ),
        return_exceptions=return_exceptions,
    )
    out: list[VerificationReport | JudgeError] = []
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, JudgeError):
            raise r
        out.append(r)
    return out
