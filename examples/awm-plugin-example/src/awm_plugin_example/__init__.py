"""An example awm plugin: every hook implementation lives at module level."""

from __future__ import annotations

from typing import Any

import click

from awm_core import Message, Reward, Trajectory, Verdict, hookimpl
from awm_core.llm import ChatResponse


class ParrotBackend:
    """Repeats the last user message; ``parrot:loud`` upper-cases it."""

    def __init__(self, model: str) -> None:
        self.name = f"parrot:{model}" if model else "parrot"
        self.loud = model == "loud"

    async def chat(self, messages: list[Message], **_: Any) -> ChatResponse:
        last = next((m.content for m in reversed(messages) if m.role == "user"), "")
        return ChatResponse(content=last.upper() if self.loud else last, model=self.name)


def brevity(verdict: Verdict | None, trajectory: Trajectory | None) -> Reward:
    """Reward short final answers: 1.0 up to 200 characters, then 200/len."""
    answer = (trajectory.final_answer if trajectory else None) or ""
    value = 1.0 if len(answer) <= 200 else 200 / len(answer)
    return Reward(value=value, reason=f"final answer has {len(answer)} characters")


@hookimpl
def register_llm_backends(register: Any) -> None:
    register("parrot", lambda model, **_: ParrotBackend(model))


@hookimpl
def register_reward_functions(register: Any) -> None:
    register("brevity", brevity)


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.command(name="example-hello")
    @click.option("--name", default="world", help="Who to greet.")
    def example_hello(name: str) -> None:
        """Say hello (a command contributed by awm-plugin-example)."""
        click.echo(f"hello, {name}, from awm-plugin-example")
