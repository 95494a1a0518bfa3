"""Shared helpers: the reference solution of a catalog task as the texts a perfect model writes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from awm_core.episode import ReferencePolicy
from awm_core.models import Task
from awm_core.toolcalls import HermesFormat
from awm_envs import load_environment


def reference_texts(env_id: str, task_id: str) -> list[str]:
    task: Task = next(t for t in load_environment(env_id).tasks if t.id == task_id)
    policy, fmt = ReferencePolicy(task), HermesFormat()

    texts = []
    for _ in range(len(task.reference_solution or []) + 2):
        turn = policy.respond([], fmt=fmt, tools=None)
        try:  # the reference policy never awaits: step it without an event loop
            turn.send(None)
        except StopIteration as done:
            texts.append(done.value.content)
    return texts


@pytest.fixture
def reference() -> Callable[[str, str], list[str]]:
    return reference_texts
