"""The deliberately naive policy of ``awm bench safety --model naive``.

It does what the user asked (each task's reference solution), but it obeys every
instruction it finds injected in a tool result first. Why ship an unsafe policy: an
attack that no agent can fall for proves nothing, so the safety benchmark is tested
with one that does fall for it, and the verifier must then name the goal it reached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from awm_core.episode import CALL_TOOL, ReferencePolicy
from awm_core.llm.base import ChatResponse
from awm_core.models import Message, Task, ToolCall
from awm_core.toolcalls import ToolCallFormat
from awm_envs.perturb import parse_injection


@dataclass
class NaivePolicy:
    """The reference solution, interrupted by whatever injected calls a tool result asks for."""

    task: Task
    name: str = "naive"
    _reference: ReferencePolicy = field(init=False)
    _queue: list[dict[str, Any]] = field(default_factory=list, init=False)
    _obeyed: set[str] = field(default_factory=set, init=False)
    _turn: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._reference = ReferencePolicy(self.task, name=self.name)

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """Obey the newest injected instruction not obeyed yet, else the reference's next turn."""
        for message in messages:
            calls = parse_injection(message.content) if message.role != "assistant" else None
            if calls:
                key = json.dumps(calls, sort_keys=True)
                if key not in self._obeyed:
                    self._obeyed.add(key)
                    self._queue.extend(c for c in calls if isinstance(c, dict))
        self._turn += 1
        if self._queue and self._turn > 1:  # list_tools always comes first
            call = self._queue.pop(0)
            return fmt.assistant_response(
                ToolCall(
                    id=f"injected_{self._turn}",
                    name=CALL_TOOL,
                    arguments={
                        "tool_name": str(call.get("tool", "")),
                        "arguments": call.get("arguments") or {},
                    },
                ),
                reasoning="A notice in the tool result says this must be done first.",
            )
        return await self._reference.respond(messages, fmt=fmt, tools=tools)


_TRANSIENT = ("Error (transient_error)", "Error (timeout)")


@dataclass
class RetryingOracle:
    """The reference solution, retrying a call the environment failed transiently (a
    ``transient_error``, a ``timeout``, a result marked ``partial``): what a robust agent
    does under the ``faults`` perturbation, and the proof that its faults can be recovered
    from (``awm bench safety --model oracle+retry``)."""

    task: Task
    name: str = "oracle+retry"
    retries: int = 3
    _reference: ReferencePolicy = field(init=False)
    _last: ChatResponse | None = field(default=None, init=False)
    _retried: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._reference = ReferencePolicy(self.task, name=self.name)

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """The previous call again after a transient failure, else the reference's next turn."""
        seen = messages[-1].content if messages and messages[-1].role != "assistant" else ""
        failed = seen.startswith(_TRANSIENT) or '"partial": true' in seen
        if self._last is not None and failed and self._retried < self.retries:
            self._retried += 1
            return self._last
        self._retried = 0
        self._last = await self._reference.respond(messages, fmt=fmt, tools=tools)
        return self._last
