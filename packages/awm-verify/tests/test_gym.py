"""Gym-style episodes (``awm_verify.TaskEnv``) on catalog environments: the loop and scorer of every rollout."""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
import tempfile
from pathlib import Path

import pytest

from awm_core.dbdiff import diff_images
from awm_core.episode import ReferencePolicy
from awm_core.models import Task
from awm_core.toolcalls import HermesFormat
from awm_envs import EnvPool, load_environment
from awm_verify import TaskEnv, rollout_episode


async def _reference_texts(task: Task) -> list[str]:
    policy, fmt = ReferencePolicy(task), HermesFormat()
    return [
        (await policy.respond([], fmt=fmt, tools=None)).content
        for _ in range(len(task.reference_solution or []) + 2)
    ]


async def _snapshot(instance: object) -> bytes:
    image = instance.snapshot()  # type: ignore[attr-defined]
    return await image if inspect.isawaitable(image) else image  # type: ignore[no-any-return]


async def _play(env: TaskEnv, task_id: str, texts: list[str]) -> tuple[object, list[object]]:
    episode = await env.episode(task_id)
    await episode.reset()
    steps = []
    for text in texts:
        step = await episode.step(text)
        steps.append(step)
        if step.done:
            break
    return await episode.reward(), steps


async def test_a_reference_played_as_text_completes_and_matches_run_episode() -> None:
    shop = load_environment("shop")
    task = next(t for t in shop.tasks if t.id == "cart_coupon_checkout")
    async with TaskEnv(shop, pool_size=2) as env:
        rollout, steps = await _play(env, task.id, await _reference_texts(task))
    assert rollout.label == "Completed" and rollout.reward == 1.0  # type: ignore[attr-defined]
    assert steps[-1].done and steps[-1].info["termination"] == "final_answer"  # type: ignore[attr-defined]
    first_tool = (task.reference_solution or [])[0].tool
    assert steps[0].info["call"] == "list_tools"  # type: ignore[attr-defined]
    assert f'"name": "{first_tool}"' in (steps[0].observation or "")  # type: ignore[attr-defined]

    # the same turns through run_episode (via rollout_episode) give the same trajectory
    pool = EnvPool(shop, size=1)
    await pool.start()
    try:
        reference = await rollout_episode(
            pool,
            task,
            ReferencePolicy(task),
            env_id=shop.id,
            initial=shop.template,
            verifier_source=(shop.path / "verifiers.py").read_text(encoding="utf-8"),
        )
    finally:
        await pool.close()
    gym_messages = [(m.role, m.content) for m in rollout.trajectory.messages]  # type: ignore[attr-defined]
    loop_messages = [(m.role, m.content) for m in reference.trajectory.messages]
    assert gym_messages == loop_messages
    assert rollout.report.diff == reference.report.diff  # type: ignore[attr-defined, union-attr]


async def test_a_malformed_turn_ends_the_episode_with_the_format_penalty() -> None:
    async with TaskEnv("shop", pool_size=1) as env:
        episode = await env.episode("cart_coupon_checkout")
        obs = await episode.reset()
        assert obs.messages[0]["role"] == "system" and obs.messages[1]["role"] == "user"
        step = await episode.step('<tool_call>{"name": "list_tools", "arguments": </tool_call>')
        assert step.done and step.info["violation"] == "malformed_json"
        rollout = await episode.reward()
        assert rollout.reward == -1.0
        assert await episode.reward() is rollout  # idempotent
        with pytest.raises(RuntimeError, match="ended"):
            await episode.step("anything")


async def test_stopping_early_scores_the_partial_trajectory_as_max_steps() -> None:
    async with TaskEnv("shop", pool_size=1) as env:
        episode = await env.episode("cart_coupon_checkout")
        await episode.reset()
        task = env.task("cart_coupon_checkout")
        await episode.step((await _reference_texts(task))[0])
        rollout = await episode.reward()
        assert rollout.trajectory.termination.value == "max_steps"
        assert rollout.reward < 1.0


async def test_concurrent_episodes_do_not_see_each_other_s_writes() -> None:
    shop = load_environment("shop")
    task = next(t for t in shop.tasks if t.id == "cart_coupon_checkout")
    texts = await _reference_texts(task)
    async with TaskEnv(shop, pool_size=2) as env:
        writer, idle = await env.episode(task.id), await env.episode(task.id)
        await writer.reset()
        await idle.reset()
        for text in texts:
            if (await writer.step(text)).done:
                break
        await idle.step(texts[0])  # list_tools only
        written, untouched = await writer.reward(), await idle.reward()
    assert not written.report.diff.is_empty  # type: ignore[union-attr]
    assert untouched.report.diff.is_empty  # type: ignore[union-attr]


async def test_misuse_gets_clear_errors() -> None:
    async with TaskEnv("shop", pool_size=1) as env:
        with pytest.raises(KeyError, match="no task 'nope'"):
            await env.episode("nope")
        episode = await env.episode("cart_coupon_checkout")
        with pytest.raises(RuntimeError, match="reset"):
            await episode.step("hello")
        with pytest.raises(RuntimeError, match="reset"):
            await episode.reward()


def test_reset_gives_a_fresh_database_each_time() -> None:
    async def main() -> tuple[bytes, bytes]:
        async with TaskEnv("shop", pool_size=1) as env:
            task = env.task("cart_coupon_checkout")
            texts = await _reference_texts(task)
            episode = await env.episode(task.id)
            await episode.reset()
            for text in texts:
                if (await episode.step(text)).done:
                    break
            first = await _snapshot(episode._instance)
            await episode.reset()  # releases the used instance, takes a fresh one
            second = await _snapshot(episode._instance)
            await episode.close()
            return first, second

    used, fresh = asyncio.run(main())
    template = load_environment("shop").template
    assert not diff_images(template, used).is_empty
    assert diff_images(template, fresh).is_empty
    with tempfile.TemporaryDirectory() as d:  # the fresh image is a real SQLite database
        path = Path(d) / "fresh.db"
        path.write_bytes(fresh)
        assert sqlite3.connect(path).execute("select count(*) from sqlite_master").fetchone()[0] > 0


async def test_initial_messages_are_the_prompt_reset_gives() -> None:
    async with TaskEnv("shop", pool_size=1) as env:
        episode = await env.episode("aeropress_stock")
        obs = await episode.reset()
        assert env.initial_messages("aeropress_stock") == obs.messages == episode.prompt()
        await episode.close()


@pytest.mark.parametrize("fmt", ["hermes", "openai"])
async def test_the_observation_holds_the_meta_tools_in_every_format(fmt: str) -> None:
    """As docs/integrations.md says: ``obs.tools`` is the two meta-tools, for clients that
    pass tools natively (it was empty with the Hermes format)."""
    from awm_core.episode import EpisodeSettings

    async with TaskEnv("shop", pool_size=1, settings=EpisodeSettings(fmt=fmt)) as env:
        episode = await env.episode("aeropress_stock")
        obs = await episode.reset()
        await episode.reward()
    names = [t["function"]["name"] for t in obs.tools]
    assert names == ["list_tools", "call_tool"]
    assert all(t["type"] == "function" and t["function"]["parameters"] for t in obs.tools)
