"""One GRPO step on awm rollouts through verl 0.9.1's own actor, on the CPU; prints JSON.

Run in its own process (``test_grpo_step.py`` does) with
``VERL_USE_EXTERNAL_MODULES=awm_train.verl_cpu_platform VERL_PLATFORM=cpu``:

1. a GRPO group of four trajectories of one catalog task from ``AWMAgentLoop``
   (instantiated through verl's registry): two by a tiny random Qwen3 generating
   through the ``LLMServerClient``, two by a scripted perfect model;
2. the rows stored as verl's V1 agent loop stores them (jagged tensors, keys
   ``{uid}_{session}_{turn}``), advantages from verl's
   ``compute_advantage_for_multi_trajectories``;
3. old log-probs from verl's FSDP2 actor (``TrainingWorker.infer_batch``),
   compared with the generator's, then one ``train_mini_batch`` with verl's
   ``ppo_loss``; parameters must change.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist


def main(model_dir: Path) -> dict[str, Any]:
    import numpy as np
    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from tensordict import TensorDict
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import AdvantageEstimator
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
    from verl.utils import tensordict_utils as tu
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.model import compute_position_id_with_mask
    from verl.workers.engine_workers import TrainingWorker, TrainingWorkerConfig
    from verl.workers.utils.losses import ppo_loss

    from awm_envs import load_environment
    from awm_train.offline import chatml_tokenizer
    from awm_train.recipes import agent_loop_config
    from awm_train.tokens import ScriptedGenerator, TransformersGenerator
    from awm_train.verl_cpu import build_agent_loop

    # --- the actor: verl's FSDP2 engine, world size 1, fp32 (a one-process "cluster")
    os.environ.update(
        RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29555"
    )
    dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp()}", rank=0, world_size=1)
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        sft = compose(
            config_name="sft_trainer_engine",
            overrides=[
                f"model.path={model_dir}",
                "engine.strategy=fsdp2",
                "engine.model_dtype=fp32",
                "+engine.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
                "+model.override_config.attn_implementation=sdpa",
                "model.use_remove_padding=false",
            ],
        )
        ppo = compose(
            config_name="ppo_trainer",
            overrides=[
                "actor_rollout_ref.actor.strategy=fsdp2",
                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
                "actor_rollout_ref.actor.ppo_mini_batch_size=1",
                "actor_rollout_ref.rollout.name=vllm",
            ],
        )
    worker = TrainingWorker(
        config=TrainingWorkerConfig(
            model_type="language_model",
            model_config=omega_conf_to_dataclass(sft.model),
            engine_config=omega_conf_to_dataclass(sft.engine),
            optimizer_config=omega_conf_to_dataclass(sft.optim),
            checkpoint_config=omega_conf_to_dataclass(sft.checkpoint),
        )
    )
    worker.reset()
    worker.set_loss_fn(partial(ppo_loss, omega_conf_to_dataclass(ppo.actor_rollout_ref.actor)))

    # --- a GRPO group through the awm agent loop, as verl's AgentLoopWorker builds it
    tokenizer = chatml_tokenizer(AutoTokenizer.from_pretrained(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    loop_config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": 8192,
                    "response_length": 12,
                    "agent": {"agent_loop_config_path": str(agent_loop_config())},
                }
            },
            "data": {},
        }
    )
    task_id = "swap_trail_shoes"
    task = next(t for t in load_environment("shop").tasks if t.id == task_id)

    def rollout(generator: Any, response_length: int) -> list[Any]:
        cfg = loop_config.copy()
        cfg.actor_rollout_ref.rollout.response_length = response_length
        loop, _ = build_agent_loop(cfg, tokenizer, generator)
        outputs: list[Any] = asyncio.run(
            loop.run({"temperature": 1.0}, extra_info={"env_id": "shop", "task_id": task_id})
        )
        return outputs

    sessions = [
        rollout(TransformersGenerator(model, tokenizer, seed=1), 12),
        rollout(ScriptedGenerator.reference(tokenizer, task), 400),
        rollout(TransformersGenerator(model, tokenizer, seed=2), 12),
        rollout(ScriptedGenerator.reference(tokenizer, task), 400),
    ]
    uid = "grouptask"
    keys, fields, sampled = [], [], []
    for session, outputs in enumerate(sessions):
        for i, out in enumerate(outputs):
            row = out.as_dict()
            input_ids = torch.cat([row["prompts"], row["responses"]])
            row["input_ids"] = input_ids
            row["position_ids"] = compute_position_id_with_mask(
                torch.ones_like(input_ids).unsqueeze(0)
            ).squeeze(0)
            row["loss_mask"] = row["response_mask"]
            keys.append(f"{uid}_{session}_{i}")
            fields.append(row)
            sampled.append(session % 2 == 0)

    def jagged(values: list[torch.Tensor]) -> torch.Tensor:
        return torch.nested.as_nested_tensor(values, layout=torch.jagged)

    seq_keys = ["input_ids", "position_ids", "prompts", "responses", "response_mask", "loss_mask"]
    batch = TensorDict(
        {k: jagged([f[k] for f in fields]) for k in seq_keys}, batch_size=[len(fields)]
    )

    # --- advantages: verl's multi-trajectory GRPO over the group
    width = max(f["responses"].numel() for f in fields)

    def pad(t: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(t, (0, width - t.numel()))

    grpo = compute_advantage_for_multi_trajectories(
        DataProto.from_dict(
            tensors={
                "response_mask": torch.stack([pad(f["response_mask"]) for f in fields]),
                "token_level_rewards": torch.stack([pad(f["rm_scores"]) for f in fields]),
            },
            non_tensors={"uid": np.array([uid] * len(fields), dtype=object)},
        ),
        keys,
        adv_estimator=AdvantageEstimator.GRPO,
    )
    advantages = [
        grpo.batch["advantages"][i, : f["responses"].numel()] for i, f in enumerate(fields)
    ]

    # --- old log-probs from the actor; the generator's must match them
    tu.assign_non_tensor(
        batch,
        use_dynamic_bsz=False,
        micro_batch_size_per_gpu=1,
        max_token_len_per_gpu=16384,
        calculate_entropy=True,
        compute_loss=False,
        temperature=1.0,
        global_token_num=[int(f["input_ids"].numel()) for f in fields],
    )
    inferred = worker.infer_batch(batch)["log_probs"]
    old, parity = [], []
    for i, f in enumerate(fields):
        start = f["prompts"].numel() - 1  # log_probs[t] scores token t + 1
        actor = inferred[i][start : start + f["responses"].numel()].float()
        old.append(actor)
        if sampled[i]:
            parity.append((actor - f["rollout_log_probs"]).abs().max().item())

    # --- one update with verl's ppo_loss
    for key in ("calculate_entropy", "compute_loss", "global_token_num"):
        tu.pop(batch, key=key, default=None)
    batch["old_log_probs"] = jagged(old)
    batch["advantages"] = jagged(advantages)
    tu.assign_non_tensor(
        batch,
        calculate_entropy=False,
        global_batch_size=len(fields),
        mini_batch_size=len(fields),
        epochs=1,
        seed=1,
        dataloader_kwargs={"shuffle": False},
        distillation_use_topk=False,
        distillation_only=False,
    )
    before = {n: p.detach().clone() for n, p in worker.engine.module.named_parameters()}
    metrics = worker.train_mini_batch(batch)["metrics"]
    changed = sum(
        int(not torch.equal(before[n], p.detach()))
        for n, p in worker.engine.module.named_parameters()
    )
    per_session: dict[str, list[float]] = {}
    for key, adv in zip(keys, advantages, strict=True):
        per_session.setdefault(key.rsplit("_", 1)[0], []).extend(adv.tolist())
    return {
        "rows": len(fields),
        "rows_trained": int(batch.batch_size[0]),
        "trajectories": len(sessions),
        "rewards": [outputs[-1].reward_score for outputs in sessions],
        "session_advantages": {
            k: sorted({round(v, 5) for v in vs}) for k, vs in per_session.items()
        },
        "max_logprob_diff": max(parity),
        "parameters_changed": changed,
        "parameters": len(before),
        "pg_loss": float(np.mean(metrics["actor/pg_loss"])),
        "grad_norm": float(np.mean(metrics["grad_norm"])),
    }


if __name__ == "__main__":
    print("GRPO_STEP " + json.dumps(main(Path(sys.argv[1]))))
    os._exit(0)  # gloo and FSDP teardown can hang at interpreter exit
