"""awm tasks served by OpenEnv's own server and driven by its own client (``nox -s adapters``)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import uvicorn
from openenv.core.generic_client import GenericEnvClient

from awm_verify.adapters.openenv import AWMAction, AWMEnvironment, app_for

Ref = Callable[[str, str], list[str]]
TASK = "cart_coupon_checkout"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app_for("shop"), port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    assert server.started, "the OpenEnv server did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


async def _play(base_url: str, texts: list[str], task_id: str = TASK) -> list[object]:
    async with GenericEnvClient(base_url=base_url) as client:
        first = await client.reset(task_id=task_id)
        results = [first]
        for text in texts:
            result = await client.step({"text": text})
            results.append(result)
            if result.done:
                break
        return results


async def test_a_reference_solution_gets_reward_1_over_openenv_s_wire(
    base_url: str, reference: Ref
) -> None:
    results = await _play(base_url, reference("shop", TASK))
    first, last = results[0], results[-1]
    assert first.observation["task_id"] == TASK  # type: ignore[attr-defined]
    assert first.observation["messages"][0]["role"] == "system"  # type: ignore[attr-defined]
    assert all(r.reward is None for r in results[1:-1])  # type: ignore[attr-defined]
    assert last.done and last.reward == 1.0  # type: ignore[attr-defined]
    assert last.observation["info"]["verdict"] == "Completed"  # type: ignore[attr-defined]


async def test_a_malformed_turn_ends_with_the_format_penalty(base_url: str) -> None:
    results = await _play(base_url, ['<tool_call>{"name": "list_tools", "arguments": </tool_call>'])
    last = results[-1]
    assert last.done and last.reward == -1.0  # type: ignore[attr-defined]


async def test_concurrent_sessions_are_isolated(base_url: str, reference: Ref) -> None:
    texts = reference("shop", TASK)
    solved, quitter = await asyncio.gather(
        _play(base_url, texts), _play(base_url, [texts[0], texts[1], "I am done."])
    )
    assert solved[-1].reward == 1.0  # type: ignore[attr-defined]
    # the quitter ran one real call on its own instance: the solver's writes are not its
    assert quitter[-1].done and quitter[-1].reward < 1.0  # type: ignore[attr-defined]


def test_the_environment_works_in_process_without_a_server(reference: Ref) -> None:
    env = AWMEnvironment("shop")
    obs = env.reset(task_id=TASK)
    assert obs.task_id == TASK and env.state.task_id == TASK
    for text in reference("shop", TASK):
        obs = env.step(AWMAction(text=text))
        if obs.done:
            break
    assert obs.reward == 1.0 and env.state.verdict == "Completed"
    assert env.state.step_count == len(reference("shop", TASK))
    env.close()
