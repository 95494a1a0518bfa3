"""awm tasks through SkyRL-gym's own registry and ``make`` (``nox -s adapters``)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

import skyrl_gym

import awm_verify.adapters.skyrl  # noqa: F401  (registers "awm")

Ref = Callable[[str, str], list[str]]
TASK = {"env_id": "shop", "task_id": "cart_coupon_checkout"}


def _play(env: object, texts: list[str]) -> list[dict[str, object]]:
    outs = []
    for text in texts:
        out = env.step(text)  # type: ignore[attr-defined]
        outs.append(out)
        if out["done"]:
            break
    return outs


def test_a_reference_solution_gets_reward_1_through_skyrl_make(reference: Ref) -> None:
    env = skyrl_gym.make("awm", env_config={"max_turns": 20}, extras=TASK)
    prompt, info = env.init([{"role": "user", "content": "ignored: awm writes the prompt"}])
    assert prompt[0]["role"] == "system" and "call_tool" in prompt[0]["content"]
    assert "coupon" in prompt[1]["content"].lower()  # the task's instruction
    assert info["task_id"] == "cart_coupon_checkout"
    outs = _play(env, reference("shop", "cart_coupon_checkout"))
    assert [o["reward"] for o in outs[:-1]] == [0.0] * (len(outs) - 1)
    assert outs[-1]["done"] and outs[-1]["reward"] == 1.0
    assert outs[-1]["metadata"]["verdict"] == "Completed"
    assert outs[0]["observations"] and "get_current_time" in outs[0]["observations"][0]["content"]
    env.close()


def test_a_row_of_awm_train_prepare_works_as_extras() -> None:
    env = skyrl_gym.make("awm", env_config={}, extras={"extra_info": TASK, "data_source": "awm"})
    _, info = env.init([])
    assert info["env_id"] == "shop"
    env.close()


def test_a_malformed_turn_ends_with_the_format_penalty() -> None:
    env = skyrl_gym.make("awm", env_config={}, extras=TASK)
    env.init([])
    out = env.step('<tool_call>{"name": "list_tools", "arguments": </tool_call>')
    assert (
        out["done"] and out["reward"] == -1.0 and out["metadata"]["violation"] == "malformed_json"
    )
    env.close()


def test_the_turn_budget_ends_the_episode_and_scores_it(reference: Ref) -> None:
    env = skyrl_gym.make("awm", env_config={"max_turns": 1}, extras=TASK)
    env.init([])
    out = env.step(reference("shop", "cart_coupon_checkout")[0])
    assert out["done"] and out["reward"] < 1.0 and out["metadata"]["verdict"] != "Completed"
    env.close()


def test_envs_stepped_from_threads_are_isolated(reference: Ref) -> None:
    texts = reference("shop", "cart_coupon_checkout")

    def run(solve: bool) -> float:
        env = skyrl_gym.make("awm", env_config={}, extras=TASK)
        env.init([])
        outs = _play(env, texts if solve else [texts[0], "I give up."])
        env.close()
        return float(outs[-1]["reward"])

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        rewards = list(pool.map(run, [True, False, True, False]))
    assert rewards[0] == rewards[2] == 1.0
    assert rewards[1] < 1.0 and rewards[3] < 1.0
