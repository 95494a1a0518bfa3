"""History truncation keeps the prefix, the first exchange and the last w turns."""

from __future__ import annotations

import pytest

from awm_core.history import split_turns, training_samples, truncate_history
from awm_core.models import Message


def conversation(turns: int) -> list[Message]:
    messages = [Message(role="system", content="sys"), Message(role="user", content="task")]
    for i in range(turns):
        messages.append(Message(role="assistant", content=f"a{i}"))
        messages.append(Message(role="tool", content=f"t{i}"))
    return messages


def contents(messages: list[Message]) -> list[str]:
    return [m.content for m in messages]


def test_window_3_keeps_first_and_last_three_turns() -> None:
    kept = truncate_history(conversation(8), 3)
    assert contents(kept) == ["sys", "task", "a0", "t0", "a5", "t5", "a6", "t6", "a7", "t7"]


def test_window_1_keeps_first_and_last_turn() -> None:
    assert contents(truncate_history(conversation(5), 1)) == ["sys", "task", "a0", "t0", "a4", "t4"]


def test_window_0_keeps_only_prefix_and_first_turn() -> None:
    assert contents(truncate_history(conversation(5), 0)) == ["sys", "task", "a0", "t0"]


@pytest.mark.parametrize("turns", [0, 1, 2, 4])
def test_history_shorter_than_window_is_unchanged(turns: int) -> None:
    messages = conversation(turns)
    assert truncate_history(messages, 3) == messages


def test_boundary_first_turn_plus_window_is_unchanged_one_more_drops_one() -> None:
    assert len(truncate_history(conversation(4), 3)) == 2 + 8
    assert contents(truncate_history(conversation(5), 3))[2:6] == ["a0", "t0", "a2", "t2"]


def test_none_keeps_everything() -> None:
    messages = conversation(30)
    assert truncate_history(messages, None) == messages


def test_negative_window_is_rejected() -> None:
    with pytest.raises(ValueError):
        truncate_history(conversation(2), -1)


def test_turn_may_hold_several_answer_messages() -> None:
    messages = conversation(1) + [
        Message(role="assistant", content="a1"),
        Message(role="tool", content="t1a"),
        Message(role="user", content="t1b"),
        Message(role="assistant", content="a2"),
    ]
    prefix, turns = split_turns(messages)
    assert contents(prefix) == ["sys", "task"]
    assert [contents(t) for t in turns] == [["a0", "t0"], ["a1", "t1a", "t1b"], ["a2"]]
    assert contents(truncate_history(messages, 1)) == ["sys", "task", "a0", "t0", "a2"]


def test_training_samples_use_the_inference_context() -> None:
    messages = conversation(6)
    samples = list(training_samples(messages, 2))
    assert [s.target.content for s in samples] == [f"a{i}" for i in range(6)]
    for sample in samples:
        cut = messages.index(sample.target)
        assert sample.context == truncate_history(messages[:cut], 2)
    assert contents(samples[5].context) == ["sys", "task", "a0", "t0", "a3", "t3", "a4", "t4"]
