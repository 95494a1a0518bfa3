"""``rollout_episode``: the one verified rollout evaluation and training share."""

from __future__ import annotations

import asyncio

from awm_core.contracts import JudgeRequest
from awm_core.episode import ReferencePolicy
from awm_core.fake_env import FakeNotesEnv
from awm_core.models import Verdict, VerdictLabel
from awm_core.session import EnvInstance
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
                task,
                ReferencePolicy(task),
                env_id=env.id,
                initial=env.template,
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


class _NotesWithoutDatabase(FakeNotesEnv):
    """A session whose state is not a database (as BFCL's, τ²'s, MCP-Universe's)."""

    async def snapshot(self) -> None:
        return None


class _RecordingJudge:
    name = "recording"

    def __init__(self) -> None:
        self.requests: list[JudgeRequest] = []

    async def judge(self, request: JudgeRequest) -> Verdict:
        self.requests.append(request)
        return Verdict(label=VerdictLabel.COMPLETED, reasoning="seen", judge=self.name)


def _roll_without_database(judge: object, verifier_source: str | None = None) -> Rollout:
    session = _NotesWithoutDatabase()
    assert isinstance(session, EnvInstance)
    task = FakeNotesEnv.tasks()[0]
    if verifier_source is not None:
        task = task.model_copy(update={"verifier": "verify_it"})
    return asyncio.run(
        rollout_episode(
            session,
            task,
            ReferencePolicy(task),
            env_id="fake_notes",
            initial=None,
            judge=judge,
            verifier_source=verifier_source,
        )
    )


def test_an_instance_without_a_database_is_judged_without_a_diff() -> None:
    judge = _RecordingJudge()
    done = _roll_without_database(judge)
    assert done.label == "Completed" and done.reward == 1.0
    assert done.report is not None and done.report.diff is None
    assert done.report.verification is None
    assert [r.diff for r in judge.requests] == [None]
    assert done.trajectory.env_id == "fake_notes"


def test_a_verifier_on_an_environment_without_a_database_is_reported_not_run() -> None:
    done = _roll_without_database("code", verifier_source="def verify_it(a, b): return True")
    assert done.report is not None and done.label == "Environment Error"
    verification = done.report.verification
    assert verification is not None and verification.error is not None
    assert "no database" in verification.error.message
    assert "no database" in done.report.verdict.reasoning
