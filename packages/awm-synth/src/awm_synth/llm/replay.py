"""The offline ``replay`` backend: recorded responses shipped inside the package.

Responses live in ``awm_synth/replay/<scenario>/<stage>.<attempt>.<ext>``
(``_scenarios/`` for the global scenario stage) and are chosen by the request
tag (stage, scenario, attempt), never by prompt text, so editing a prompt does
not break replay. When a later attempt has no file the highest recorded one
answers: the recordings hold deliberately broken first attempts followed by
the repaired ones, which walks every self-correction path with no network.

Scenario names ``<base>__<suffix>`` answer as ``<base>``: benchmarks clone the
recorded scenarios into as many environments as they need.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from awm_core.llm.base import ChatResponse
from awm_core.models import Message, TokenUsage
from awm_synth.errors import ReplayMissingError
from awm_synth.llm.tags import GLOBAL_SCENARIO, RequestKey, key_from_messages

REPLAY_ROOT = Path(__file__).resolve().parents[1] / "replay"
_FILE = re.compile(r"^(?P<stage>[a-z_]+)\.(?P<attempt>\d+)\.[a-z]+$")


def recorded_scenarios(root: Path = REPLAY_ROOT) -> list[str]:
    """Scenario names with a whole pipeline recorded (folders with a ``tasks`` recording):
    what ``awm synth all --backend replay`` can build. Other folders answer a later stage
    alone for an existing environment (``tickets/safety.*.json``: ``awm synth safety`` on
    a copy of the catalog's tickets)."""
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and "tasks" in _index(p)
    )


@cache
def _index(folder: Path) -> dict[str, dict[int, Path]]:
    found: dict[str, dict[int, Path]] = {}
    if folder.is_dir():
        for path in folder.iterdir():
            match = _FILE.match(path.name)
            if match:
                found.setdefault(match["stage"], {})[int(match["attempt"])] = path
    return found


def replay_text(key: RequestKey, root: Path = REPLAY_ROOT) -> str:
    """The recorded answer for ``key``; raises :class:`ReplayMissingError` naming what is missing."""
    base = key.scenario.split("__", 1)[0]
    folder = root / ("_scenarios" if key.scenario == GLOBAL_SCENARIO else base)
    attempts = _index(folder).get(key.stage)
    if not attempts:
        known = ", ".join(
            sorted(
                p.name
                for p in root.iterdir()
                if p.is_dir() and not p.name.startswith(".") and key.stage in _index(p)
            )
        )
        raise ReplayMissingError(
            f"no replay recording for stage {key.stage!r} of scenario {base!r} in {folder.name}/; "
            f"that stage is recorded for: {known or 'no scenario'}. Use a real backend "
            "(--backend openai:MODEL) for others."
        )
    if key.attempt in attempts:
        chosen = key.attempt
    else:
        earlier = [a for a in attempts if a <= key.attempt]
        chosen = max(earlier) if earlier else min(attempts)
    return attempts[chosen].read_text(encoding="utf-8")


def _usage(messages: list[Any], text: str) -> TokenUsage:
    chars = 0
    for m in messages:
        content = m.content if isinstance(m, Message) else (m.get("content") or "")
        chars += len(str(content))
    return TokenUsage(prompt_tokens=max(1, chars // 4), completion_tokens=max(1, len(text) // 4))


class ReplayBackend:
    """Answers from the recordings; usage is estimated at four characters per token."""

    def __init__(self, model: str = "", root: Path | None = None) -> None:
        self.root = Path(root) if root else (Path(model) if model else REPLAY_ROOT)
        self.name = "replay" if not model else f"replay:{model}"

    @classmethod
    def from_spec(cls, model: str, **options: Any) -> ReplayBackend:
        """``replay`` uses the shipped recordings; ``replay:DIR`` a folder of your own."""
        return cls(model, root=options.get("root"))

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> ChatResponse:
        key = key_from_messages(messages)
        if key is None:
            raise ReplayMissingError("the replay backend answers only tagged awm-synth requests")
        text = replay_text(key, self.root)
        return ChatResponse(
            content=text, model=self.name, usage=_usage(messages, text), finish_reason="stop"
        )


def replay_responder(root: Path = REPLAY_ROOT) -> Callable[[dict[str, Any]], str]:
    """A reply function for ``ScriptedOpenAIServer``: answers an OpenAI request body from the recordings."""

    def reply(body: dict[str, Any]) -> str:
        key = key_from_messages(body.get("messages", []))
        if key is None:
            raise ReplayMissingError("request carries no awm-synth tag")
        return replay_text(key, root)

    return reply
