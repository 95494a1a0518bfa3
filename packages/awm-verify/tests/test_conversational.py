"""Conversational catalog tasks end to end: ``awm run --reference`` replays the reference
conversation to reward 1.0, ``awm view`` shows the user's turns, ``TaskEnv`` hands the
user's replies back as observations, and acting before asking scores 0."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.conversation import SIMULATED_USER
from awm_core.episode import ReferencePolicy
from awm_core.models import ToolCall
from awm_core.toolcalls import HermesFormat
from awm_envs import load_environment
from awm_verify import TaskEnv

TASK = "conv_cancel_order"


def _awm(*args: str) -> str:
    result = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_awm_run_reference_replays_the_conversation_to_reward_1_and_view_shows_the_user(
    tmp_path: Path,
) -> None:
    out = tmp_path / "conv.json"
    _awm("run", "--env", "shop", "--task", TASK, "--reference", "--out", str(out))
    trajectory = json.loads(out.read_text())
    assert trajectory["termination_reason"] == "the user ended the conversation"
    verdict = json.loads(_awm("verify", "run", str(out), "--json"))
    assert verdict["reward"]["value"] == 1.0, verdict["reward"]
    assert verdict["verification"]["evidence"]["communication"]["passed"] is True
    shown = _awm("view", str(out), "--print")
    assert "step 1 · the user replies" in shown and "It's order 16." in shown
    assert "no call: a message to the user" in shown


async def test_task_env_gives_user_turns_as_observations() -> None:
    shop = load_environment("shop")
    task = next(t for t in shop.tasks if t.id == TASK)
    policy, fmt = ReferencePolicy(task), HermesFormat()
    async with TaskEnv(shop, pool_size=1) as env:
        assert env.initial_messages(TASK)[1]["content"] == task.user.opening  # type: ignore[union-attr]
        episode = await env.episode(TASK)
        first = await episode.reset()
        assert "send_message_to_user" in [t["function"]["name"] for t in first.tools]
        steps = []
        while not episode.done:
            text = (await policy.respond([], fmt=fmt, tools=None)).content
            steps.append(await episode.step(text))
        rollout = await episode.reward()
    replies = [s.info["user_reply"] for s in steps if "user_reply" in s.info]
    assert replies == ["It's order 16.", "Yes, please cancel it.", "Great, thank you!"]
    assert steps[1].observation == "It's order 16."
    assert steps[1].messages[0]["role"] == "user"
    assert any(m.name == SIMULATED_USER for m in rollout.trajectory.messages)
    assert rollout.reward == 1.0


async def test_acting_before_asking_scores_zero_though_the_database_is_right() -> None:
    shop = load_environment("shop")
    fmt = HermesFormat()

    def call(tool: str, args: dict[str, object]) -> str:
        inner = ToolCall(name="call_tool", arguments={"tool_name": tool, "arguments": args})
        return fmt.assistant_response(inner, reasoning="act").content

    texts = [
        fmt.assistant_response(ToolCall(name="list_tools"), reasoning="list").content,
        "<think>ask</think>\nWhich order?",
        call("cancel_order", {"order_id": 16, "reason": "Cancelled at customer's request"}),
        "<think>tell</think>\nOrder 16 is cancelled.",
        "<think>tell</think>\nAnything else?",
    ]
    async with TaskEnv(shop, pool_size=1) as env:
        episode = await env.episode(TASK)
        await episode.reset()
        for text in texts:
            if episode.done:
                break
            await episode.step(text)
        rollout = await episode.reward()
    evidence = rollout.report.verification.evidence  # type: ignore[union-attr]
    assert evidence["order_cancelled"] is True  # the database alone would pass
    assert evidence["communication"]["unconfirmed"], evidence["communication"]
    assert rollout.reward == 0.0


async def test_the_llm_judge_reads_the_conversation_and_what_the_policy_demanded() -> None:
    from awm_core.episode import run_episode
    from awm_envs import EnvPool
    from awm_verify.judge_prompt import build_user_prompt

    shop = load_environment("shop")
    task = next(t for t in shop.tasks if t.id == TASK)
    async with EnvPool(shop, size=1) as pool, pool.instance() as instance:
        trajectory = await run_episode(ReferencePolicy(task), instance, task)
    prompt = build_user_prompt(task, trajectory)
    section = prompt.split("## Conversation with the user\n", 1)[1].split("\n## ", 1)[0]
    assert "Only the user knew (the agent had to ask, not guess): order number: 16" in section
    assert "before calling: cancel_order" in section
    lines = section.splitlines()
    said = lines.index("user: It's order 16.")
    assert lines[said - 1] == "agent: Sure, I can help with that. What is the order number?"
    assert any(line.startswith("  (calls cancel_order(") for line in lines[said:])
    plain = next(t for t in shop.tasks if t.user is None)
    assert "## Conversation with the user" not in build_user_prompt(plain, trajectory)
