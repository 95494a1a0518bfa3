"""``rollout_episode``: the one verified rollout evaluation and training share."""

from __future__ import annotations

import asyncio

from awm_core.contracts import JudgeRequest
from awm_core.episode import ReferencePolicy
from awm_core.models import Verdict
from awm_envs import EnvPool, load_environment
from awm_verify import JudgeError, Rollout, rollout_episode


class _BrokenJudge:
    name = "broken"

    async def judge(self, request: JudgeRequest) -> Verdict:
        raise JudgeError("the judge model is down")


def _roll(judge: object) -> Rollout:
    env = load_environment("shop")
    task = next(t for t in env.tasks if t.id == "cart_coupon_checkout")
    source = (env.path / "verifiers.py").read_text()

    async def go() -> Rollout:
        async with EnvPool(env, size=1) as pool:
            return await rollout_episode(
                pool,
                env,
                task,
                ReferencePolicy(task),
                judge=judge,
                verifier_source=source,
            )

    return asyncio.run(go())


def test_a_reference_rollout_is_completed_and_timed() -> None:
    done = _roll("code")
    assert done.report is not None and done.label == "Completed" and done.reward == 1.0
    assert done.report.verification is not None and done.report.verification.complete
    assert set(done.timings) == {"model_s", "env_s", "verify_s", "total_s"}
    assert done.timings["env_s"] > 0 and done.timings["total_s"] >= done.timings["verify_s"]


def test_a_judge_failure_scores_zero_instead_of_raising() -> None:
    done = _roll(_BrokenJudge())
    assert done.report is None and done.reward == 0.0 and done.label == "Environment Error"
    assert done.judge_error is not None and "down" in done.judge_error
