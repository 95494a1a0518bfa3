"""User simulators: who answers the agent in a conversational task.

A simulator is built for one task (``factory(task, **options)``, registered through
the ``register_user_simulators`` hook) and answers each agent message with the
user's next turn; a turn containing :data:`~awm_core.conversation.STOP_TOKEN` ends
the conversation. Two ship with awm-core, registered like any plugin's:

``scripted``
    The task's ``user.replies``, one per agent message, then the stop token: the
    reference conversation, tests and offline proofs need no model.
``llm``
    Any awm backend (``model="openai:gpt-4o-mini"``, its own setting, apart from the
    policy's) playing the user from a prompt built out of the task's ``user`` section.

The simulator sees the dialogue from the agent's side (``assistant``: the agent's
messages to the user, ``user``: the user's turns, the opening first); the LLM
simulator swaps the roles so its model speaks as the user.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_core.conversation import STOP_TOKEN
from awm_core.errors import UserSimulatorError
from awm_core.llm.base import LLMBackend
from awm_core.llm.wire import split_reasoning
from awm_core.models import Message, Task, UserSection

__all__ = ["LLMUser", "ScriptedUser", "user_prompt"]


def _section(task: Task) -> UserSection:
    if task.user is None:
        raise UserSimulatorError(
            f"task {task.id!r} has no user section; only conversational tasks have a user"
        )
    return task.user


@dataclass
class ScriptedUser:
    """Answers from a fixed list of replies, in order; once they run out, it stops.

    ``replies`` default to the task's ``user.replies``; a task without them cannot be
    played by a script (use the ``llm`` simulator).
    """

    task: Task
    replies: Sequence[str] | None = None
    name: str = "scripted"
    _left: list[str] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        replies = self.replies if self.replies is not None else _section(self.task).replies
        if replies is None:
            raise UserSimulatorError(
                f"task {self.task.id!r} has no user.replies to script the user with; "
                "add them, or pick the llm user simulator with a model"
            )
        self._left = list(replies)

    async def reply(self, dialogue: list[Message]) -> str:
        """The next scripted reply, or the stop token when the script is spent."""
        return self._left.pop(0) if self._left else STOP_TOKEN


def user_prompt(section: UserSection) -> str:
    """The system prompt an LLM plays the user from, built out of the task's user section.

    Written for this project in the manner of τ²-bench's user simulator: the model is
    the customer, not the assistant; it reveals what it knows only when asked, one
    piece at a time, never invents facts, and ends with the stop token.
    """
    lines = [
        "You are role-playing a person who is chatting with a customer-service agent. "
        "You are the customer, never the agent: do not offer help, do not call tools, "
        "and do not describe what the agent should do internally.",
        "",
        f"What you want: {section.goal}",
    ]
    if section.persona:
        lines.append(f"Who you are: {section.persona}")
    if section.hidden_facts:
        lines.append("What you know (say each only when the agent asks for it):")
        lines += [f"- {f.name}: {f.value}" for f in section.hidden_facts]
    if section.accepts:
        lines.append("You agree to:")
        lines += [f"- {a}" for a in section.accepts]
    if section.refuses:
        lines.append("You turn down:")
        lines += [f"- {r}" for r in section.refuses]
    lines += [
        "",
        "How to talk:",
        "- Write one short, natural message per turn, as a person typing in a chat.",
        "- Give only the facts the agent asks for; if it asks for something you were not "
        "told above, say you do not know rather than making it up.",
        "- When the agent proposes an action, answer yes or no according to what you agree "
        "to and what you turn down.",
        f"- When your goal is met{f' ({section.ends_when})' if section.ends_when else ''}, "
        f"or it clearly cannot be met, end the conversation by writing {STOP_TOKEN} "
        "on its own at the end of your message.",
    ]
    return "\n".join(lines)


@dataclass
class LLMUser:
    """A model plays the user; ``backend`` is its own, apart from the policy's."""

    task: Task
    backend: LLMBackend
    temperature: float | None = 0.0
    max_tokens: int | None = 512
    name: str = "llm"

    @classmethod
    def build(cls, task: Task, *, model: str | None = None, **options: Any) -> LLMUser:
        """``model`` is any awm backend spec; the other options are the sampling ones."""
        from awm_core.registry import get_backend

        _section(task)
        if not model:
            raise UserSimulatorError(
                "the llm user simulator needs its own model, e.g. model='openai:gpt-4o-mini' "
                "(awm run --user-model SPEC)"
            )
        temperature = options.pop("temperature", 0.0)
        max_tokens = options.pop("max_tokens", 512)
        backend = get_backend(model, **options)
        return cls(task, backend, temperature, max_tokens, name=f"llm:{model}")

    def messages(self, dialogue: list[Message]) -> list[Message]:
        """The simulator model's prompt: the user prompt, then the dialogue with roles swapped."""
        swapped = {"assistant": "user", "user": "assistant"}
        out = [Message(role="system", content=user_prompt(_section(self.task)))]
        if dialogue and dialogue[0].role == "user":
            # the chat must open with the other side: a greeting stands for the agent's
            out.append(Message(role="user", content="Hi! How can I help you today?"))
        out += [Message(role=swapped[m.role], content=m.content) for m in dialogue]  # type: ignore[arg-type]
        return out

    async def reply(self, dialogue: list[Message]) -> str:
        """The model's next turn as the user; an empty answer is an error, never silence."""
        response = await self.backend.chat(
            self.messages(dialogue), temperature=self.temperature, max_tokens=self.max_tokens
        )
        text = split_reasoning(response.content)[1].strip()
        if not text:
            raise UserSimulatorError(f"the user simulator {self.name} returned an empty turn")
        return text
