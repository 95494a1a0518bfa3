"""AWMAgentLoop inside verl 0.9.1's own registration and instantiation path (``nox -s train``).

The agent-loop YAML is loaded into verl's registry and the loop built with
``hydra.utils.instantiate`` exactly as ``AgentLoopWorker`` does; generation goes
through an ``LLMServerClient`` subclass running a tiny random Qwen3 on the CPU
(or a scripted reply stream); environments, verifiers and rewards are awm's own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from awm_envs import load_environment
from awm_train.offline import smollm2_tokenizer, tiny_qwen3
from awm_train.recipes import agent_loop_config
from awm_train.tokens import GeneratedTokens, TransformersGenerator, reference_replies

RECIPE = agent_loop_config()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return smollm2_tokenizer()


def _config() -> Any:
    return OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 8192,
                    "response_length": 400,
                    "agent": {"agent_loop_config_path": str(RECIPE)},
                }
            },
            "data": {},
        }
    )


class _Scripted:
    """The model edge for a deterministic run: reference replies, tokenized."""

    def __init__(self, tokenizer: Any, replies: list[str]) -> None:
        self.tokenizer, self.replies = tokenizer, replies

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        text = self.replies.pop(0)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        return GeneratedTokens([*ids, self.tokenizer.eos_token_id], [0.0] * (len(ids) + 1))


def _loop(config: Any, tokenizer: Any, generator: Any) -> Any:
    """Register the YAML entries and instantiate the loop as verl's AgentLoopWorker does."""
    from awm_train.verl_cpu import build_agent_loop

    return build_agent_loop(config, tokenizer, generator)


def _reference_replies(task_id: str) -> list[str]:
    return reference_replies(next(t for t in load_environment("shop").tasks if t.id == task_id))


def test_a_solved_task_becomes_one_verl_row_per_turn(tokenizer: Any) -> None:
    config = _config()
    replies = _reference_replies("cart_coupon_checkout")
    loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, list(replies)))
    outputs = asyncio.run(
        loop.run(
            {"temperature": 1.0},
            extra_info={"env_id": "shop", "task_id": "cart_coupon_checkout"},
        )
    )
    assert len(outputs) == len(replies)
    for out in outputs:
        assert out.reward_score == 1.0
        assert out.extra_fields["reward_extra_info"]["verdict_completed"] == 1.0
        assert out.response_mask == [1] * len(out.response_ids)
        assert out.response_ids[-1] == tokenizer.eos_token_id
        tensors = out.as_dict()  # what verl stores per row
        assert tensors["rm_scores"][-1].item() == 1.0 and tensors["rm_scores"][:-1].sum() == 0
        assert tensors["prompts"].tolist() == out.prompt_ids


def test_a_random_model_scores_minus_one_and_its_log_probs_are_the_actor_s(
    tokenizer: Any,
) -> None:
    config = _config()
    config.actor_rollout_ref.rollout.response_length = 12
    model = tiny_qwen3(tokenizer)
    loop, client = _loop(config, tokenizer, TransformersGenerator(model, tokenizer))
    outputs = asyncio.run(
        loop.run({"temperature": 1.0}, extra_info={"env_id": "shop", "task_id": "swap_trail_shoes"})
    )
    assert client.requests == len(outputs) >= 1
    assert {o.reward_score for o in outputs} == {-1.0}  # random weights break the format
    for out in outputs:
        ids = torch.tensor([out.prompt_ids + out.response_ids])
        with torch.inference_mode():
            logits = model(ids).logits[0, len(out.prompt_ids) - 1 : -1].float()
        # the generator sampled at temperature 1.0: its log-probs are the plain softmax's
        recomputed = torch.log_softmax(logits, -1).gather(1, ids[0, len(out.prompt_ids) :, None])
        diff = (recomputed[:, 0] - torch.tensor(out.response_logprobs)).abs().max().item()
        assert diff < 1e-4, diff


def test_the_paper_recipe_composes_against_verl_s_own_config(tmp_path: Path) -> None:
    """Every override names a key verl 0.9.1's ppo_trainer config has (Hydra rejects unknown ones)."""
    import verl
    from hydra import compose, initialize_config_dir

    from awm_train.recipes import load_recipe

    command = load_recipe("paper").command(tmp_path, model="/models/qwen3")
    overrides = command[3:]
    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    assert cfg.algorithm.adv_estimator == "grpo" and cfg.trainer.use_v1 is True
    assert cfg.actor_rollout_ref.actor.clip_ratio_high == 0.28
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == "awm_agent"
    assert cfg.actor_rollout_ref.rollout.prompt_length == 16384


def test_a_grpo_group_of_awm_trajectories_through_verl_s_advantage_code(tokenizer: Any) -> None:
    """Four samples of one task (two solved, two breaking the format) stored as verl stores them.

    Rows are keyed ``{uid}_{session}_{turn}`` as in verl's V1 agent-loop storage, with
    ``rm_scores`` as ``AgentLoopOutput.as_dict`` makes them; verl's own
    ``compute_advantage_for_multi_trajectories`` must give every row of a trajectory the
    same advantage, keep every row, and rank solved trajectories above failed ones.
    """
    import numpy as np
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    config = _config()
    task_id = "cart_coupon_checkout"
    uid = "promptA"  # verl splits keys on "_": a uid must not contain one
    scripts = [_reference_replies(task_id), ["No tool needed."]] * 2
    keys, rows = [], []
    for session, replies in enumerate(scripts):
        loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, list(replies)))
        outputs = asyncio.run(
            loop.run({"temperature": 1.0}, extra_info={"env_id": "shop", "task_id": task_id})
        )
        for i, out in enumerate(outputs):
            keys.append(f"{uid}_{session}_{i}")
            rows.append(out.as_dict())
    width = max(r["responses"].numel() for r in rows)

    def pad(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(t, (0, width - t.numel()))

    data = DataProto.from_dict(
        tensors={
            "response_mask": torch.stack([pad(r["response_mask"]) for r in rows]),
            "token_level_rewards": torch.stack([pad(r["rm_scores"]) for r in rows]),
        },
        non_tensors={"uid": np.array([uid] * len(rows), dtype=object)},
    )
    out = compute_advantage_for_multi_trajectories(
        data, keys, adv_estimator=AdvantageEstimator.GRPO
    )
    adv = out.batch["advantages"]
    assert adv.shape[0] == len(rows) == len(keys)  # no row dropped
    per_session: dict[str, set[float]] = {}
    for key, row, mask in zip(keys, adv, out.batch["response_mask"], strict=True):
        values = row[mask.bool()]
        per_session.setdefault(key.rsplit("_", 1)[0], set()).update(
            round(v, 5) for v in values.tolist()
        )
    assert all(len(v) == 1 for v in per_session.values()), per_session  # one advantage each
    solved = {per_session[f"{uid}_{s}"].pop() for s in (0, 2)}
    failed = {per_session[f"{uid}_{s}"].pop() for s in (1, 3)}
    assert len(solved) == len(failed) == 1 and solved.pop() > 0 > failed.pop()
