"""The paper's three verification case studies (appendix B.4), end to end.

Each case runs the real pipeline: the diff of two SQLite databases, the task's
verifier in the sandbox, and the judge talking HTTP to a scripted model behind
the real OpenAI-protocol server. The scripted model decides from the prompt
alone (see ``judge_model`` in conftest.py), so a right verdict proves the evidence reached it.
"""

from __future__ import annotations

import json

import pytest
from cases import judge_for, load_case

from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Trajectory, VerdictLabel
from awm_verify.verify import VerificationReport, verify_episode


@pytest.fixture
def server(judge_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    return judge_server


async def run_case(case: str, judge: str, srv: ScriptedOpenAIServer, pool) -> VerificationReport:  # type: ignore[no-untyped-def]
    c = load_case(case)
    return await verify_episode(
        c["task"],  # type: ignore[arg-type]
        c["trajectory"],  # type: ignore[arg-type]
        initial=c["initial"],  # type: ignore[arg-type]
        final=c["final"],  # type: ignore[arg-type]
        verifier_source=c["verifier_source"],  # type: ignore[arg-type]
        judge=judge_for(judge, srv),
        pool=pool,
    )


def last_prompt(srv: ScriptedOpenAIServer) -> str:
    return str(srv.requests[-1]["messages"][-1]["content"])


# --------------------------------------------------------------------------- case 1


async def test_clean_read_only_query_is_completed_on_the_evidence(server, pool):
    report = await run_case("bid_history", "code+llm", server, pool)
    assert report.verification is not None and report.verification.complete is True
    assert report.diff.is_empty
    assert report.verdict.label == VerdictLabel.COMPLETED
    assert report.reward.value == 1.0
    # the model cited the verifier's figures, which it can only have read in the prompt
    assert '"bid_count": 4' in report.verdict.reasoning
    assert '"highest_bid": 180.0' in report.verdict.reasoning


async def test_clean_read_only_query_with_a_wrong_answer_is_rejected_by_the_evidence(server, pool):
    c = load_case("bid_history")
    traj: Trajectory = c["trajectory"]  # type: ignore[assignment]
    wrong = traj.model_copy(update={"final_answer": "It has 3 bids; the highest is $150."})
    report = await verify_episode(
        c["task"],  # type: ignore[arg-type]
        wrong,
        initial=c["initial"],  # type: ignore[arg-type]
        final=c["final"],  # type: ignore[arg-type]
        verifier_source=c["verifier_source"],  # type: ignore[arg-type]
        judge=judge_for("code+llm", server),
        pool=pool,
    )
    assert report.verification is not None and report.verification.complete is False
    assert report.verdict.label == VerdictLabel.AGENT_ERROR
    assert report.reward.value == 0.0


async def test_clean_read_only_query_code_judge_agrees(server, pool):
    report = await run_case("bid_history", "code", server, pool)
    assert report.verdict.label == VerdictLabel.COMPLETED


# --------------------------------------------------------------------------- case 2


async def test_idempotent_create_is_a_false_negative_for_the_code_judge(server, pool):
    report = await run_case("idempotent_routine", "code", server, pool)
    assert report.diff.is_empty  # before and after are byte-identical
    assert report.verification is not None and report.verification.complete is False
    assert report.verdict.label == VerdictLabel.AGENT_ERROR
    assert report.reward.value == 0.0


async def test_idempotent_create_is_completed_by_the_code_augmented_judge(server, pool):
    report = await run_case("idempotent_routine", "code+llm", server, pool)
    assert report.verdict.label == VerdictLabel.COMPLETED
    assert report.reward.value == 1.0
    prompt = last_prompt(server)
    assert "No database changes" in prompt
    assert 'create_routine({"name": "Morning Stretch", "schedule": "daily"}) -> ok' in prompt
    assert '"routine_id": 4' in report.verdict.reasoning


# --------------------------------------------------------------------------- case 3


async def test_wrong_parent_is_a_false_positive_for_the_llm_only_judge(server, pool):
    report = await run_case("wrong_parent_event", "llm", server, pool)
    assert report.verdict.label == VerdictLabel.COMPLETED  # fooled by successful calls
    prompt = last_prompt(server)
    assert "Database changes" not in prompt and "Verification program" not in prompt


async def test_wrong_parent_is_rejected_by_the_code_augmented_judge(server, pool):
    report = await run_case("wrong_parent_event", "code+llm", server, pool)
    assert report.verdict.label == VerdictLabel.AGENT_ERROR
    assert report.reward.value == 0.0
    # the diff shows the duplicate event and the session under it
    table = report.diff.table("sessions")
    assert table is not None and table.inserted == [
        {"session_id": 51, "event_id": 13, "title": "Keynote", "start_time": "09:00"}
    ]
    prompt = last_prompt(server)
    assert '+ {event_id: 13, name: "DevConf 2025"' in prompt
    assert '"keynote_sessions_on_target": 0' in prompt
    evidence = json.loads(report.verdict.reasoning.split("success: ", 1)[1].rstrip("."))
    assert evidence["events_added"] == [{"event_id": 13, "name": "DevConf 2025"}]


async def test_wrong_parent_code_judge_also_rejects(server, pool):
    report = await run_case("wrong_parent_event", "code", server, pool)
    assert report.verdict.label == VerdictLabel.AGENT_ERROR
