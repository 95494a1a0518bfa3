"""Judges: the code judge's mapping, strict parsing with retries over real HTTP, batches."""

from __future__ import annotations

import asyncio
import json

import pytest

from awm_core import get_judge, list_judges
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Task, Trajectory, VerdictLabel
from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult
from awm_verify.judge import (
    CodeJudge,
    JudgeError,
    JudgeOutputError,
    JudgeRequest,
    judge_many,
    parse_judge_reply,
)

TASK = Task(
    id="t1",
    instruction="Cancel order 2.",
    complexity="easy",
    success_criteria=["Order 2 is cancelled."],
)
TRAJ = Trajectory(env_id="shop", task_id="t1", final_answer="Cancelled order 2.")


def result(
    complete: bool | None, evidence: dict | None = None, error: VerifierError | None = None
) -> VerifierResult:
    return VerifierResult(
        function="verify_t1",
        signature="native",
        complete=complete,
        evidence=evidence or {},
        error=error,
    )


def request(v: VerifierResult | None) -> JudgeRequest:
    return JudgeRequest(TASK, TRAJ, v, None)


def llm_judge(name: str, srv: ScriptedOpenAIServer, **kw):  # type: ignore[no-untyped-def]
    return get_judge(
        name,
        model="openai:judge",
        backend_options={"base_url": srv.base_url, "api_key": "t", "max_retries": 0},
        **kw,
    )


ANSWER = json.dumps({"label": "Completed", "reasoning": "order 2 is cancelled"})


def test_all_three_judges_are_registered():
    assert {"code", "llm", "code+llm"} <= set(list_judges())


# --------------------------------------------------------------------------- code judge


@pytest.mark.parametrize(
    ("v", "label"),
    [
        (result(True), VerdictLabel.COMPLETED),
        (result(False), VerdictLabel.AGENT_ERROR),
        (result(False, {"partial": True}), VerdictLabel.PARTIALLY_COMPLETED),
        (result(False, {"progress": 0.5}), VerdictLabel.PARTIALLY_COMPLETED),
        (
            result(None, error=VerifierError(kind=VerifierErrorKind.TIMEOUT, message="slow")),
            VerdictLabel.ENVIRONMENT_ERROR,
        ),
    ],
)
def test_code_judge_maps_the_verifier_result(v, label):
    assert CodeJudge().decide(request(v)).label == label


def test_code_judge_cannot_decide_evidence_only_verifiers():
    with pytest.raises(JudgeError, match="code\\+llm"):
        CodeJudge().decide(request(result(None, {"rows": 1})))


def test_code_judge_needs_a_verifier_result():
    with pytest.raises(JudgeError, match="needs a verifier result"):
        CodeJudge().decide(request(None))


# --------------------------------------------------------------------------- parsing


def test_parse_accepts_exact_json_and_a_fenced_block():
    assert parse_judge_reply(ANSWER) == (VerdictLabel.COMPLETED, "order 2 is cancelled")
    assert parse_judge_reply(f"```json\n{ANSWER}\n```")[0] == VerdictLabel.COMPLETED
    assert (
        parse_judge_reply('{"label": "agent  error", "reasoning": ""}')[0]
        == VerdictLabel.AGENT_ERROR
    )


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Completed", "not a JSON object"),
        ("[1]", "not an object"),
        ('{"label": "Completed"}', "missing reasoning"),
        ('{"label": "Completed", "reasoning": "x", "confidence": 0.9}', "unexpected confidence"),
        ('{"label": "Done", "reasoning": "x"}', "must be one of"),
        ('{"label": 1, "reasoning": "x"}', "must be a string"),
    ],
)
def test_parse_rejects_anything_else_and_says_why(reply, problem):
    with pytest.raises(ValueError, match=problem):
        parse_judge_reply(reply)


# --------------------------------------------------------------------------- over HTTP


async def test_malformed_replies_are_retried_with_the_problem_explained():
    with ScriptedOpenAIServer(
        ["sure, Completed!", '{"label": "Done", "reasoning": "x"}', ANSWER]
    ) as srv:
        verdict = await llm_judge("code+llm", srv).judge(request(result(True)))
        assert verdict.label == VerdictLabel.COMPLETED and verdict.judge == "code+llm"
        assert verdict.evidence["attempts"] == 3
        assert len(verdict.evidence["malformed_replies"]) == 2
        retry_messages = srv.requests[1]["messages"]
        assert retry_messages[-2] == {"role": "assistant", "content": "sure, Completed!"}
        assert "cannot be used" in retry_messages[-1]["content"]


async def test_persistently_malformed_replies_end_in_a_typed_error():
    with ScriptedOpenAIServer(["no"] * 3) as srv:
        with pytest.raises(JudgeOutputError, match="3 attempt") as info:
            await llm_judge("llm", srv, max_attempts=3).judge(request(None))
        assert info.value.last_reply == "no"
        assert srv.request_count == 3


async def test_model_failure_is_a_judge_error():
    with (
        ScriptedOpenAIServer([], failures=[500]) as srv,
        pytest.raises(JudgeError, match="model failed"),
    ):
        await llm_judge("llm", srv).judge(request(None))


def test_llm_judges_without_a_model_say_how_to_configure_one(monkeypatch):
    monkeypatch.delenv("AWM_JUDGE_MODEL", raising=False)
    with pytest.raises(JudgeError, match="AWM_JUDGE_MODEL"):
        get_judge("code+llm")


async def test_the_code_augmented_prompt_carries_criteria_evidence_and_errors():
    with ScriptedOpenAIServer([ANSWER]) as srv:
        failed = result(
            None, error=VerifierError(kind=VerifierErrorKind.FORBIDDEN, message="os.system")
        )
        await llm_judge("code+llm", srv).judge(request(failed))
        prompt = srv.requests[0]["messages"][-1]["content"]
        assert "## Success criteria\n- Order 2 is cancelled." in prompt
        assert "failed (forbidden): os.system" in prompt
        assert srv.requests[0]["response_format"] == {"type": "json_object"}


async def test_judge_many_keeps_the_order_of_the_requests():
    def reply(body):  # type: ignore[no-untyped-def]
        last = body["messages"][-1]["content"]
        return json.dumps(
            {"label": "Agent Error" if "order 9" in last else "Completed", "reasoning": ""}
        )

    with ScriptedOpenAIServer(reply, latency_s=0.02) as srv:
        judge = llm_judge("llm", srv, max_concurrency=3)
        tasks = [
            Task(id=f"t{i}", instruction=f"Cancel order {i}.", complexity="easy") for i in range(10)
        ]
        verdicts = await judge_many(judge, [JudgeRequest(t, TRAJ) for t in tasks])
        expected = [
            VerdictLabel.AGENT_ERROR if i == 9 else VerdictLabel.COMPLETED for i in range(10)
        ]
        assert [v.label for v in verdicts] == expected  # type: ignore[union-attr]
        assert srv.request_count == 10


async def test_judge_semaphore_limits_requests_in_flight():
    in_flight = peak = 0
    lock = asyncio.Lock()

    with ScriptedOpenAIServer(lambda body: ANSWER, latency_s=0.1) as srv:
        judge = llm_judge("llm", srv, max_concurrency=2)
        backend = judge.backend
        real_chat = backend.chat

        async def tracked_chat(*a, **kw):  # type: ignore[no-untyped-def]
            nonlocal in_flight, peak
            async with lock:
                in_flight += 1
                peak = max(peak, in_flight)
            try:
                return await real_chat(*a, **kw)
            finally:
                async with lock:
                    in_flight -= 1

        backend.chat = tracked_chat  # type: ignore[method-assign]
        await judge_many(judge, [request(None)] * 6)
        assert peak == 2


async def test_judge_many_can_return_errors_in_place():
    replies = [ANSWER, "garbage", "garbage"]
    with ScriptedOpenAIServer(replies) as srv:
        judge = llm_judge("llm", srv, max_attempts=1, max_concurrency=1)
        out = await judge_many(judge, [request(None)] * 3, return_exceptions=True)
        assert out[0].label == VerdictLabel.COMPLETED  # type: ignore[union-attr]
        assert all(isinstance(x, JudgeOutputError) for x in out[1:])
