"""``verify_many``: a concurrent batch gives each episode the report it gets alone, in order.

The batch mixes the three case studies with wrong answers and unchanged databases,
so every episode's verdict, evidence and diff differ; results that were swapped,
shared or lost between episodes cannot compare equal to the serial ones.
"""

from __future__ import annotations

import pytest
from cases import judge_for, load_case

from awm_core.models import Verdict, VerdictLabel
from awm_verify.judge import JudgeError
from awm_verify.verify import Episode, verify_episode, verify_many

CASES = ("bid_history", "idempotent_routine", "wrong_parent_event")


def batch() -> list[Episode]:
    episodes: list[Episode] = []
    for round_ in range(4):
        for name in CASES:
            c = load_case(name)
            traj = c["trajectory"]
            final = c["final"]
            if round_ == 1:  # a wrong answer
                traj = traj.model_copy(update={"final_answer": f"I could not do it ({name})."})
            if round_ == 2:  # nothing happened
                final = c["initial"]
            episodes.append(
                Episode(c["task"], traj, c["initial"], final, c["verifier_source"])  # type: ignore[arg-type]
            )
    return episodes


def essence(report) -> tuple[object, ...]:  # type: ignore[no-untyped-def]
    v = report.verification
    return (
        report.task_id,
        report.verdict.label,
        report.reward.value,
        v and (v.ok, v.complete, v.evidence),
        report.diff.model_dump(),
    )


@pytest.mark.parametrize("judge", ["code", "code+llm"])
async def test_a_concurrent_batch_matches_verifying_each_episode_alone(judge, judge_server, pool):
    episodes = batch()
    together = await verify_many(episodes, judge=judge_for(judge, judge_server), pool=pool)
    alone = [
        await verify_episode(
            e.task,
            e.trajectory,
            initial=e.initial,
            final=e.final,
            verifier_source=e.verifier_source,
            judge=judge_for(judge, judge_server),
            pool=pool,
        )
        for e in episodes
    ]
    assert len(together) == len(episodes) == 12
    assert [essence(r) for r in together] == [essence(r) for r in alone]
    # the batch really is mixed: different verdicts and both rewards occur
    assert len({essence(r)[1] for r in alone}) >= 2
    assert {essence(r)[2] for r in alone} >= {0.0, 1.0}


class _FailsOn:
    """A judge that cannot decide one task (its model never answered) and passes the rest."""

    name = "fails-on"

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id

    async def judge(self, request) -> Verdict:  # type: ignore[no-untyped-def]
        if request.task.id == self.task_id:
            raise JudgeError(f"no usable answer for {self.task_id}")
        return Verdict(label=VerdictLabel.COMPLETED, judge=self.name)


async def test_a_failed_judgement_stays_in_its_place_with_return_exceptions(pool):
    episodes = batch()[:3]
    bad = episodes[1].task.id
    out = await verify_many(episodes, judge=_FailsOn(bad), pool=pool, return_exceptions=True)
    assert isinstance(out[1], JudgeError) and bad in str(out[1])
    assert [r.task_id for r in (out[0], out[2])] == [episodes[0].task.id, episodes[2].task.id]  # type: ignore[union-attr]


async def test_a_failed_judgement_raises_without_return_exceptions(pool):
    episodes = batch()[:3]
    with pytest.raises(JudgeError, match=episodes[2].task.id):
        await verify_many(episodes, judge=_FailsOn(episodes[2].task.id), pool=pool)
