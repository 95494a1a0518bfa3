"""The strict-JSON loop both judges use: a rejected reply goes back with what was wrong."""

from __future__ import annotations

import json

import pytest

from awm_core.llm.base import LLMError
from awm_core.llm.scripted import ScriptedBackend
from awm_core.llm.structured import Attempts, UnusableAnswerError, chat_until_valid
from awm_core.models import Message

MSGS = [Message(role="user", content="rate it")]


def parse_score(text: str) -> int:
    data = json.loads(text)  # JSONDecodeError is a ValueError
    if not isinstance(data.get("score"), int):
        raise ValueError("'score' must be an integer")
    return int(data["score"])


async def test_a_rejected_reply_is_sent_back_with_the_problem() -> None:
    backend = ScriptedBackend(['{"score": "high"}', '{"score": 4}'])
    score, attempts = await chat_until_valid(
        backend.chat, MSGS, parse_score, max_attempts=3, answer_again="Answer with {score}."
    )
    assert (score, attempts.count) == (4, 2)
    assert attempts.problems == ["'score' must be an integer"]
    retry = backend.calls[1][-1].content
    assert retry == "That reply cannot be used: 'score' must be an integer. Answer with {score}."


async def test_attempts_run_out_with_every_problem_kept() -> None:
    backend = ScriptedBackend(["no", "still no"])
    with pytest.raises(UnusableAnswerError, match="no usable answer in 2 attempt") as info:
        await chat_until_valid(backend.chat, MSGS, parse_score, max_attempts=2, answer_again="")
    assert info.value.attempts.count == 2 and len(info.value.attempts.problems) == 2
    assert info.value.attempts.last_reply == "still no"


async def test_a_backend_error_propagates_and_the_record_says_how_far_it_got() -> None:
    backend = ScriptedBackend(["no"])  # the second call exhausts the script: LLMError
    attempts = Attempts()
    with pytest.raises(LLMError):
        await chat_until_valid(
            backend.chat, MSGS, parse_score, max_attempts=3, answer_again="", attempts=attempts
        )
    assert attempts.count == 2 and len(attempts.problems) == 1
