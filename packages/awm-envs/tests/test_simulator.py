"""The Simulator baseline: a real environment's tools and tasks, answered by an LLM.

The simulator model is the scripted backend (a real backend answering from a
script), so the prompts it receives can be inspected.
"""

from __future__ import annotations

import asyncio
import json

from awm_core.episode import ReferencePolicy, run_episode
from awm_core.llm.scripted import ScriptedBackend
from awm_core.models import Termination
from awm_envs import SimulatedEnvironment, load_environment


def _sim(replies: list[str]) -> tuple[SimulatedEnvironment, ScriptedBackend]:
    backend = ScriptedBackend(replies)
    return SimulatedEnvironment(load_environment("shop"), backend), backend


def test_it_offers_the_real_environment_s_tools_and_tasks() -> None:
    sim, _ = _sim([])
    real = load_environment("shop")
    tools = asyncio.run(sim.instance().list_tools())
    assert [t.name for t in tools] == [t.name for t in real.tools]
    assert [t.id for t in sim.tasks] == [t.id for t in real.tasks]


def test_a_call_is_answered_by_the_model_which_sees_schema_spec_and_earlier_calls() -> None:
    sim, backend = _sim(
        [
            json.dumps({"ok": True, "result": {"cart_item_id": 99, "quantity": 2}}),
            json.dumps({"ok": False, "error": "product 777 not found"}),
        ]
    )
    inst = sim.instance()
    first = asyncio.run(inst.call_tool("add_to_cart", {"product_id": 2, "quantity": 2}))
    assert not first.is_error and first.content == {"cart_item_id": 99, "quantity": 2}
    second = asyncio.run(inst.call_tool("add_to_cart", {"product_id": 777}))
    assert second.is_error and second.error_type == "tool_error" and "777" in second.content
    prompt = backend.calls[-1]
    assert "CREATE TABLE" in (prompt[0].content or "")  # the schema
    assert '"tool": "add_to_cart"' in (prompt[-1].content or "")  # the spec and the call
    assert "cart_item_id" in (prompt[2].content or "")  # its own earlier answer


def test_bad_calls_never_reach_the_model_and_get_the_real_checker_s_message() -> None:
    sim, backend = _sim([])
    real = load_environment("shop").instance()
    inst = sim.instance()
    bad = asyncio.run(inst.call_tool("add_to_cart", {"product_id": "two"}))
    assert bad.error_type == "invalid_arguments"
    assert bad.content == real.call_tool_sync("add_to_cart", {"product_id": "two"}).content
    unknown = asyncio.run(inst.call_tool("launch_rocket", {}))
    assert unknown.error_type == "unknown_tool" and backend.calls == []


def test_an_unusable_answer_is_an_environment_error() -> None:
    sim, _ = _sim(["Sure! The item was added."])
    result = asyncio.run(sim.instance().call_tool("add_to_cart", {"product_id": 2}))
    assert result.is_error and result.error_type == "environment_error"


def test_the_episode_loop_runs_on_it_like_on_an_executable_environment() -> None:
    real = load_environment("shop")
    task = next(t for t in real.tasks if t.id == "cart_coupon_checkout")
    steps = task.reference_solution or []
    sim, _ = _sim([json.dumps({"ok": True, "result": {"step": i}}) for i in range(len(steps))])

    async def go() -> Termination:
        async with sim.pool(size=1) as pool, pool.instance() as inst:
            traj = await run_episode(ReferencePolicy(task), inst, task, env_id=sim.id)
            assert inst.snapshot_sync() == real.template  # nothing executes, nothing changes
            return traj.termination

    assert asyncio.run(go()) == Termination.FINAL_ANSWER
