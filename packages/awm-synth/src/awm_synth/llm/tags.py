"""The tag every synthesis request carries: which stage, scenario and attempt it belongs to.

The tag is one line at the top of the last user message
(``[awm-synth stage=code scenario=online_bookstore attempt=2]``). It makes
requests self-describing: the replay backend answers by tag rather than by
prompt text (so editing a prompt never breaks replay), accounting attributes
usage to a stage and an environment, and a log of requests can be read without
the pipeline's state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from awm_core.models import Message

_TAG_RE = re.compile(
    r"\[awm-synth stage=(?P<stage>[a-z_]+) scenario=(?P<scenario>[A-Za-z0-9_\-]+) "
    r"attempt=(?P<attempt>\d+)\]"
)

GLOBAL_SCENARIO = "_global"


@dataclass(frozen=True)
class RequestKey:
    """Identity of one request inside a run."""

    stage: str
    scenario: str = GLOBAL_SCENARIO
    attempt: int = 1

    def tag(self) -> str:
        """The line placed at the top of the request's last user message."""
        return f"[awm-synth stage={self.stage} scenario={self.scenario} attempt={self.attempt}]"


def parse_tag(text: str) -> RequestKey | None:
    """Read a tag out of message text, or None when there is none."""
    match = _TAG_RE.search(text)
    if match is None:
        return None
    return RequestKey(match["stage"], match["scenario"], int(match["attempt"]))


def key_from_messages(messages: list[Message] | list[dict[str, Any]]) -> RequestKey | None:
    """The tag of the newest user message that has one (Message objects or OpenAI dicts)."""
    history: Sequence[Message | dict[str, Any]] = messages
    for message in reversed(history):
        role: object
        content: object
        if isinstance(message, Message):
            role, content = message.role, message.content
        else:
            role, content = message.get("role"), message.get("content")
        if role == "user" and isinstance(content, str):
            key = parse_tag(content)
            if key is not None:
                return key
    return None
