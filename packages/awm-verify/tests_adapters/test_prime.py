"""awm tasks as a ``verifiers`` environment, evaluated by verifiers' own loop over real HTTP.

The model is a real OpenAI-protocol server on 127.0.0.1 (awm-core's scripted server)
that answers each conversation with its task's reference solution, or with a bad
turn for the tasks named in ``SABOTAGE`` (``nox -s adapters``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import verifiers as vf

from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_envs import load_environment
from awm_verify.adapters.prime import AWMVerifiersEnv
from awm_verify.adapters.prime import load_environment as load_vf

Ref = Callable[[str, str], list[str]]
TASKS = ["cart_coupon_checkout", "aeropress_stock"]
SABOTAGE = {"aeropress_stock"}


def _model(reference: Ref) -> Callable[[dict[str, Any]], str]:
    by_instruction = {t.instruction: t.id for t in load_environment("shop").tasks}

    def reply(body: dict[str, Any]) -> str:
        messages = body["messages"]
        task_id = by_instruction[next(m["content"] for m in messages if m["role"] == "user")]
        turn = sum(m["role"] == "assistant" for m in messages)
        if task_id in SABOTAGE and turn == 1:
            return '<tool_call>{"name": "call_tool", "arguments": </tool_call>'
        return reference("shop", task_id)[turn]

    return reply


@pytest.fixture
def results(reference: Ref, monkeypatch: pytest.MonkeyPatch) -> Any:
    env = load_vf("shop", tasks=TASKS, max_turns=20)
    assert isinstance(env, AWMVerifiersEnv) and isinstance(env, vf.MultiTurnEnv)
    monkeypatch.setenv("AWM_TEST_KEY", "x")
    with ScriptedOpenAIServer(_model(reference)) as server:
        client = vf.ClientConfig(api_base_url=server.base_url, api_key_var="AWM_TEST_KEY")
        return env.evaluate_sync(
            client=client, model="scripted", num_examples=-1, rollouts_per_example=2
        )


def _rows(results: Any) -> list[tuple[str, float]]:
    outputs = results["outputs"] if isinstance(results, dict) else results.outputs
    return [(o["info"]["task_id"], float(o["reward"])) for o in outputs]


def test_verifiers_scores_awm_rollouts_with_awm_s_verified_reward(results: Any) -> None:
    rows = _rows(results)
    assert sorted(rows) == sorted(
        [("aeropress_stock", -1.0)] * 2 + [("cart_coupon_checkout", 1.0)] * 2
    )


def test_the_dataset_holds_awm_s_prompt_and_task_ids() -> None:
    env = AWMVerifiersEnv("shop", tasks=["cart_coupon_checkout"])
    row = env.get_eval_dataset()[0]
    assert row["info"] == {"env_id": "shop", "task_id": "cart_coupon_checkout"}
    assert row["prompt"][0]["role"] == "system" and "call_tool" in row["prompt"][0]["content"]
