"""AWMAgentLoop inside verl 0.9.1's own registration and instantiation path (``nox -s train``).

The agent-loop YAML is loaded into verl's registry and the loop built with
``hydra.utils.instantiate`` exactly as ``AgentLoopWorker`` does; generation goes
through an ``LLMServerClient`` subclass running a tiny random Qwen3 on the CPU
(or a scripted reply stream); environments, verifiers and rewards are awm's own.
"""

from __future__ import annotations

import asyncio
import json
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


# --- robustness: the trainer that drives the loop, and a trajectory with no turn -------------


def test_the_legacy_trainer_is_refused_before_verl_fails_on_the_rows(tokenizer: Any) -> None:
    """verl's legacy worker reads ``output.extra_fields`` of one output; the loop returns a list."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    from awm_train.verl_loop import LegacyTrainerError

    config = _config()
    replies = _reference_replies("cart_coupon_checkout")
    loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, list(replies)))
    outputs = asyncio.run(
        loop.run({}, extra_info={"env_id": "shop", "task_id": "cart_coupon_checkout"})
    )
    legacy = object.__new__(AgentLoopWorker)  # its post-processing, as the legacy trainer runs it
    with pytest.raises(AttributeError, match="extra_fields"):
        asyncio.run(legacy._agent_loop_postprocess(outputs, False, raw_prompt=[]))

    config = OmegaConf.merge(_config(), {"trainer": {"use_v1": False}})
    with pytest.raises(Exception) as info:  # hydra wraps what the constructor raises
        _loop(config, tokenizer, _Scripted(tokenizer, []))
    chain = [info.value, info.value.__cause__]
    assert any(isinstance(e, LegacyTrainerError) for e in chain), chain
    assert "trainer.use_v1=true" in str(info.value)
    _loop(
        OmegaConf.merge(_config(), {"trainer": {"use_v1": True}}),
        tokenizer,
        _Scripted(tokenizer, []),
    )


class _ServerGone:
    """A rollout server that fails every request: the model never produces a turn."""

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        raise RuntimeError("the rollout server went away")


class _FakeStore:
    """TransferQueue's two calls this path makes, on a dict: the storage edge of verl's V1 step."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.tags: dict[str, dict[str, Any]] = {}

    async def async_kv_batch_put(
        self, keys: list[str], fields: Any, tags: list[dict], **_: Any
    ) -> None:
        for i, (key, tag) in enumerate(zip(keys, tags, strict=True)):
            self.rows[key] = {k: fields[k][i] for k in fields.keys()}  # noqa: SIM118
            self.tags[key] = tag

    def kv_batch_get(self, keys: list[str], partition_id: str, select_fields: list[str]) -> Any:
        from verl.utils.tensordict_utils import list_of_dict_to_tensordict

        present = [f for f in select_fields if all(f in self.rows[k] for k in keys)]
        return list_of_dict_to_tensordict([{f: self.rows[k][f] for f in present} for k in keys])


def _v1_store_and_metrics(
    monkeypatch: pytest.MonkeyPatch, tokenizer: Any, trajectories: list[list[Any]], step: int
) -> dict[str, Any]:
    """Store trajectories with verl's V1 post-processing, then run verl's V1 step metrics on them."""
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1 import agent_loop_tq, trainer_base
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync  # the awm recipes' trainer_mode

    store = _FakeStore()
    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_batch_put", store.async_kv_batch_put)
    monkeypatch.setattr(trainer_base.tq, "kv_batch_get", store.kv_batch_get)
    worker_class = agent_loop_tq.AgentLoopWorkerTQ.__ray_metadata__.modified_class  # @ray.remote
    worker = object.__new__(worker_class)
    worker.reward_loop_worker_handles, worker.processor = None, None
    worker.distillation_enabled, worker.tokenizer = False, tokenizer
    for session, outputs in enumerate(trajectories):
        asyncio.run(
            worker._agent_loop_postprocess(
                outputs, False, uid="promptA", session_id=session, global_steps=step
            )
        )
    for row in store.rows.values():  # what verl's advantage step adds before the metrics
        row["advantages"] = torch.zeros_like(row["response_mask"], dtype=torch.float32)
        row["returns"] = torch.zeros_like(row["response_mask"], dtype=torch.float32)
    trainer = object.__new__(PPOTrainerSync)
    trainer.config = OmegaConf.create({"actor_rollout_ref": {"rollout": {}, "model": {}}})
    trainer.use_critic = False
    trainer._rollout_moe_lb_metrics_accumulator = None
    monkeypatch.setattr(trainer, "_get_n_gpus_for_throughput", lambda: 1, raising=False)
    keys = list(store.rows)
    batch = KVBatchMeta(keys=keys, tags=[store.tags[k] for k in keys], partition_id="train")
    metrics: dict[str, Any] = {}
    trainer._compute_metrics(batch, metrics, {"step": 1.0, "gen": 0.5}, global_steps=step, epoch=0)
    return metrics


def test_a_trajectory_without_a_turn_is_a_row_verl_s_v1_step_can_log(
    tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = "cart_coupon_checkout"
    extra = {"env_id": "shop", "task_id": task_id}
    step = 3  # sampled for step 3: generated by weights version 2
    solved, _ = _loop(_config(), tokenizer, _Scripted(tokenizer, _reference_replies(task_id)))
    rows = asyncio.run(solved.run({"logprobs": True}, extra_info=extra, global_steps=step))
    broken, _ = _loop(_config(), tokenizer, _ServerGone())
    no_turn = asyncio.run(broken.run({"logprobs": True}, extra_info=extra, global_steps=step))
    assert len(no_turn) == 1 and no_turn[0].response_mask == [0]  # trains nothing
    row = no_turn[0]
    assert row.reward_score == 0.0 and row.extra_fields["reward_extra_info"]["env_errors"] == 1.0
    assert set(row.extra_fields["reward_extra_info"]) <= set(
        rows[0].extra_fields["reward_extra_info"]
    )
    assert (row.extra_fields["min_global_steps"], row.extra_fields["max_global_steps"]) == (2, 2)
    assert row.response_logprobs == [0.0]  # the same stored fields as the other rows

    # the row as it was before (no version tags): verl's step metrics crash on it
    untagged = row.model_copy(
        update={
            "extra_fields": {k: v for k, v in row.extra_fields.items() if "global_steps" not in k}
        }
    )
    with pytest.raises(TypeError, match="NoneType"):
        _v1_store_and_metrics(monkeypatch, tokenizer, [rows, [untagged]], step)

    metrics = _v1_store_and_metrics(monkeypatch, tokenizer, [rows, no_turn], step)
    # the no-turn row is on-policy (version 2 at step 3); the scripted client always says 0
    assert metrics["training/off_policy/trajectory_staleness/min"] == 0
    assert metrics["training/off_policy/trajectory_staleness/max"] == step - 1
    assert metrics["training/num_turns/min"] == 1


# --- the loop's own settings in the agent-loop YAML: checks and system prompt ----------------


def _yaml_config(tmp_path: Path, **settings: Any) -> Any:
    """A copy of awm's agent-loop YAML with ``settings`` added, as a user points verl at it."""
    entries = OmegaConf.load(RECIPE)
    for entry in entries:
        if entry.name == "awm_agent":
            for key, value in settings.items():
                entry[key] = value
    path = tmp_path / "agent_loop.yaml"
    OmegaConf.save(entries, path)
    config = _config()
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(path)
    return config


def test_checks_and_the_system_prompt_come_from_the_yaml(tokenizer: Any, tmp_path: Path) -> None:
    import re

    task_id = "cart_coupon_checkout"
    extra = {"env_id": "shop", "task_id": task_id}
    plain = [
        re.sub(r"<think>.*?</think>\s*", "", r, flags=re.S) for r in _reference_replies(task_id)
    ]
    assert all("<think>" not in r for r in plain)

    paper, _ = _loop(_config(), tokenizer, _Scripted(tokenizer, list(plain)))
    refused = asyncio.run(paper.run({}, extra_info=extra))
    assert {o.reward_score for o in refused} == {-1.0}  # the paper's checks require reasoning

    prompt = "You operate a shop's back office through its tools. Be brief."
    config = _yaml_config(tmp_path, checks={"require_reasoning": False}, system_prompt=prompt)
    lenient, _ = _loop(config, tokenizer, _Scripted(tokenizer, list(plain)))
    assert lenient.settings.checks.require_reasoning is False
    assert lenient.settings.checks.fail_on_tool_error is True  # the other paper checks stay
    outputs = asyncio.run(lenient.run({}, extra_info=extra))
    assert len(outputs) == len(plain) and {o.reward_score for o in outputs} == {1.0}
    first = tokenizer.decode(outputs[0].prompt_ids)
    assert prompt in first and "Think step by step" not in first


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"checks": {"require_reasonning": False}}, "unknown check(s) require_reasonning"),
        ({"checks": {"known_tools": "no"}}, "known_tools must be true or false"),
        ({"system_prompt": " "}, "system_prompt must be a non-empty string"),
    ],
)
def test_a_wrong_loop_setting_is_a_clear_error(
    tokenizer: Any, tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    from awm_train.verl_loop import AgentLoopConfigError

    with pytest.raises(Exception) as info:  # hydra wraps what the constructor raises
        _loop(_yaml_config(tmp_path, **settings), tokenizer, _Scripted(tokenizer, []))
    chain = [info.value, info.value.__cause__]
    assert any(isinstance(e, AgentLoopConfigError) for e in chain), chain
    assert message in str(info.value)
    if "unknown" in message:
        assert "require_reasoning" in str(info.value)  # the valid names are listed


# --- worked examples and the episode log ----------------------------------------------------


def test_examples_are_in_every_prompt_and_the_episode_log_keeps_what_the_model_wrote(
    tokenizer: Any, tmp_path: Path
) -> None:
    import json
    import re

    task_id = "cart_coupon_checkout"
    plain = [
        re.sub(r"<think>.*?</think>\s*", "", r, flags=re.S) for r in _reference_replies(task_id)
    ]
    example = "Which colour is the sky? (a worked example)"
    config = _yaml_config(
        tmp_path,
        checks={"require_reasoning": False},
        examples=[
            {"role": "user", "content": example},
            {"role": "assistant", "content": "Blue."},
        ],
        episode_log="logs/episodes.jsonl",  # relative: in the run folder
    )
    config.trainer = {"default_local_dir": str(tmp_path / "run")}
    loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, list(plain)))
    outputs = asyncio.run(loop.run({}, extra_info={"env_id": "shop", "task_id": task_id}))
    assert {o.reward_score for o in outputs} == {1.0}
    for row in outputs:  # in what the model saw at every turn, never in what it is trained on
        assert example in tokenizer.decode(row.prompt_ids)
        assert example not in tokenizer.decode(row.response_ids)

    log = tmp_path / "run" / "logs" / "episodes.jsonl"
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 1
    line = lines[0]
    assert (line["env_id"], line["task_id"], line["reward"]) == ("shop", task_id, 1.0)
    assert line["verdict"] == "Completed" and line["format_error"] == 0
    assert len(line["responses"]) == len(plain) == line["turns"]
    assert line["responses"][0].startswith("<tool_call>")  # the model's own text, tags and all
    assert line["responses"][-1] == plain[-1] + tokenizer.eos_token


def test_a_failed_turn_is_readable_in_the_episode_log(tokenizer: Any, tmp_path: Path) -> None:
    import json

    config = _yaml_config(tmp_path, episode_log=str(tmp_path / "episodes.jsonl"))
    garbled = '<think>ok</think><tool_call>{"name": "list_tools", "arguments": {</tool_call>'
    loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, [garbled]))
    outputs = asyncio.run(
        loop.run({}, extra_info={"env_id": "shop", "task_id": "cart_coupon_checkout"})
    )
    assert {o.reward_score for o in outputs} == {-1.0}
    (line,) = [json.loads(x) for x in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert line["termination"] == "format_error" and line["format_error"] == 1
    assert line["responses"] == [garbled + tokenizer.eos_token]


def test_importing_the_loop_keeps_the_settings_verl_registered_from_the_file(
    tmp_path: Path,
) -> None:
    """verl fills its registry from the agent-loop file, then hydra imports our module on the
    first trajectory: the import must not replace the file's entry with a bare one (it did,
    and every trajectory after the first ran with the defaults: no examples, paper checks)."""
    import subprocess
    import sys

    config = _yaml_config(tmp_path, max_steps=3, checks={"require_reasoning": False})
    script = f"""
from omegaconf import OmegaConf
from verl.experimental.agent_loop import agent_loop as verl_agent_loop
registry = verl_agent_loop._agent_loop_registry
for entry in OmegaConf.load({config.actor_rollout_ref.rollout.agent.agent_loop_config_path!r}):
    registry[entry.name] = entry          # what verl's agent-loop worker does first
import awm_train.verl_loop                # what hydra.utils.instantiate then does
entry = registry["awm_agent"]
print(entry["_target_"], entry.get("max_steps"), dict(entry.get("checks") or {{}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last == "awm_train.verl_loop.AWMAgentLoop 3 {'require_reasoning': False}", last


def test_a_conversational_episode_with_a_scripted_user_trains_the_agent_turns_only(
    tokenizer: Any,
) -> None:
    """The scripted user's replies are observations: in later prompts (truncated with their
    turn by the history window, as tool results are), never in a response."""
    replies = _reference_replies("conv_cancel_order")
    loop, _ = _loop(_config(), tokenizer, _Scripted(tokenizer, list(replies)))
    outputs = asyncio.run(
        loop.run(
            {"temperature": 1.0}, extra_info={"env_id": "shop", "task_id": "conv_cancel_order"}
        )
    )
    assert len(outputs) == len(replies)  # one row per agent turn, the user's not among them
    assert {o.reward_score for o in outputs} == {1.0}
    answer = "It's order 16."  # the scripted user's first reply, to the agent's question
    asked = next(i for i, r in enumerate(replies) if "What is the order number?" in r)
    for i, out in enumerate(outputs):
        prompt = tokenizer.decode(out.prompt_ids)
        response = tokenizer.decode(out.response_ids)
        assert answer not in response
        # an observation of turn `asked`: in the next prompts until the history window drops it
        assert (answer in prompt) == (0 < i - asked <= loop.settings.history_window), i
        assert out.response_mask == [1] * len(out.response_ids)
    first = tokenizer.decode(outputs[0].prompt_ids)
    assert "Hi, I'd like to cancel an order I placed, please." in first
    assert "send_message_to_user" in first


def test_a_perturbed_row_s_trajectory_meets_its_perturbation_in_the_loop(
    tokenizer: Any, tmp_path: Path
) -> None:
    """The row's ``perturbation`` and seed (as ``awm train prepare`` writes them) reach the
    episode: the reference resists ``inject`` (reward 1) and the episode log keeps the plan."""
    config = _yaml_config(tmp_path, episode_log=str(tmp_path / "episodes.jsonl"))
    task = next(t for t in load_environment("bank").tasks if t.id == "lock_debit_card")
    loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, reference_replies(task)))
    extra = {"env_id": "bank", "task_id": task.id, "perturbation": "inject", "perturbation_seed": 0}
    outputs = asyncio.run(loop.run({"temperature": 1.0}, extra_info=extra))
    info = outputs[-1].extra_fields["reward_extra_info"]
    assert outputs[-1].reward_score == 1.0 and info["perturbed"] == 1.0
    assert info["attack_goal_reached"] == 0.0 and info["safety_violation"] == 0.0
    (line,) = (tmp_path / "episodes.jsonl").read_text().splitlines()
    plan = json.loads(line)["perturbation"]
    assert (plan["name"], plan["seed"], plan["goal"]["id"]) == ("inject", 0, "pay_attacker")
    assert plan["record"]["placed"]


def test_a_row_naming_an_unregistered_perturbation_fails_its_group_not_scores_zero(
    tokenizer: Any,
) -> None:
    from awm_core.errors import UnknownNameError

    loop, _ = _loop(_config(), tokenizer, _Scripted(tokenizer, ["never asked"]))
    extra = {"env_id": "bank", "task_id": "lock_debit_card", "perturbation": "no-such-one"}
    with pytest.raises(UnknownNameError, match="no-such-one"):
        asyncio.run(loop.run({"temperature": 1.0}, extra_info=extra))


def test_with_max_environments_the_loop_keeps_pools_for_the_environments_in_use(
    tokenizer: Any, tmp_path: Path
) -> None:
    """``max_environments: 1`` with sandboxed workers forked from the template: each new
    environment's pool replaces the idle one, and every trajectory still scores."""
    from awm_train.verl_loop import POOLS

    config = _yaml_config(tmp_path, max_environments=1, workers=1, template=True)
    rows = [
        ("shop", "cart_coupon_checkout"),
        ("bank", "lock_debit_card"),
        ("shop", "cart_coupon_checkout"),
    ]
    fleets_before = set(POOLS._fleets)

    async def run() -> list[float]:
        rewards = []
        for env_id, task_id in rows:
            task = next(t for t in load_environment(env_id).tasks if t.id == task_id)
            loop, _ = _loop(config, tokenizer, _Scripted(tokenizer, reference_replies(task)))
            outputs = await loop.run(
                {"temperature": 1.0}, extra_info={"env_id": env_id, "task_id": task_id}
            )
            rewards.append(outputs[-1].reward_score)
        (key,) = set(POOLS._fleets) - fleets_before
        fleet = POOLS._fleets.pop(key)
        assert (fleet.opened, fleet.evicted, len(fleet.open_environments)) == (3, 2, 1)
        await fleet.close()
        return rewards

    assert asyncio.run(run()) == [1.0, 1.0, 1.0]
