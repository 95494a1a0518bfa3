"""History truncation: the context a model sees at each step, shared by inference and training.

The paper keeps the system prompt, the first user message, the first
assistant/tool exchange (the ``list_tools`` call and its answer, which the agent
needs for the rest of the episode) and the last ``w`` turns. History-aware
training must build each sample's context exactly as the episode loop built the
prompt, so both call these pure functions.

A *turn* is one assistant message and the tool/user messages that answer it.
The *prefix* is everything before the first assistant message (the system
prompt and the task), kept whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from awm_core.models import Message

DEFAULT_WINDOW = 3


def split_turns(messages: Sequence[Message]) -> tuple[list[Message], list[list[Message]]]:
    """``(prefix, turns)``: the messages before the first assistant one, then one list per turn."""
    prefix: list[Message] = []
    turns: list[list[Message]] = []
    for message in messages:
        if message.role == "assistant":
            turns.append([message])
        elif turns:
            turns[-1].append(message)
        else:
            prefix.append(message)
    return prefix, turns


def truncate_history(
    messages: Sequence[Message], window: int | None = DEFAULT_WINDOW
) -> list[Message]:
    """The messages a model is shown: prefix, first turn, and the last ``window`` turns.

    ``window=None`` keeps everything; ``window=0`` keeps only the prefix and the
    first turn. Nothing is reordered or edited, so the result is always a
    sub-sequence of ``messages``.
    """
    if window is not None and window < 0:
        raise ValueError(f"history window must be >= 0 or None, got {window}")
    prefix, turns = split_turns(messages)
    if window is None or len(turns) <= 1 + window:
        return list(messages)
    kept = [turns[0], *(turns[len(turns) - window :] if window else [])]
    return [*prefix, *(m for turn in kept for m in turn)]


@dataclass(frozen=True)
class TrainingSample:
    """One assistant turn as a training row: the context it was generated from, and the target."""

    index: int
    context: list[Message]
    target: Message


def training_samples(
    messages: Sequence[Message], window: int | None = DEFAULT_WINDOW
) -> Iterator[TrainingSample]:
    """One sample per assistant turn, its context truncated exactly as at inference."""
    for i, message in enumerate(messages):
        if message.role == "assistant":
            yield TrainingSample(
                index=sum(1 for m in messages[:i] if m.role == "assistant"),
                context=truncate_history(messages[:i], window),
                target=message,
            )
