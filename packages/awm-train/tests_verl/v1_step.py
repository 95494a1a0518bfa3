"""One GRPO step through verl 0.9.1's V1 trainer machinery on the CPU, on catalog tasks; prints JSON.

Run in its own process (``test_v1_step.py`` does) with
``VERL_USE_EXTERNAL_MODULES=awm_train.verl_cpu_platform VERL_PLATFORM=cpu``:
``python v1_step.py MODEL_DIR DATA_DIR`` where DATA_DIR holds ``awm train prepare`` output
(every row of its ``train.parquet`` is one prompt of the step's batch).

The path is verl's own: the trainer config composed from verl's ``ppo_trainer.yaml``;
``PPOTrainerSync`` (its replay buffer, its dataloader over verl's ``RLHFDataset``);
TransferQueue on a local Ray; ``AgentLoopManagerTQ`` starting ``AgentLoopWorkerTQ`` as a
Ray actor that runs ``AWMAgentLoop`` (registered through the agent-loop YAML, as a user
registers it); then ``PPOTrainer.step``: ``ReplayBuffer.sample`` → ``_balance_batch`` →
``_compute_old_log_prob`` → ``_compute_advantage`` → ``_update_actor`` with verl's FSDP2
``ActorRolloutRefWorker`` in this process. What is not verl's: the generation client (a
transformers model instead of vLLM), the CPU platform plug-in, and a world-size-1 worker
group (``_LocalWorkerGroup``) standing in for ``RayWorkerGroup``; no weight sync (one step).

The client answers half of the trajectories with a task's reference solution (scored by
the model, so every row has the model's log-probs) and samples the other half from the
tiny random model, so a GRPO group holds rewards 1 and -1. For a row perturbed by an
attack (``awm train prepare`` wrote its perturbation and seed), the other half is the
naive policy instead: the injection goal's calls, then the reference solution.
The agent loop keeps an episode log (``DATA_DIR/episodes.jsonl``), returned in the JSON.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from awm_train.verl_cpu import TransformersServerClient


def _rows(data_dir: Path) -> list[dict[str, Any]]:
    """The ``extra_info`` of every training row."""
    import pyarrow.parquet as pq

    table = pq.read_table(data_dir / "train.parquet", columns=["extra_info"])
    return list(table.column(0).to_pylist())


def _naive_replies(extra: dict[str, Any], task: Any) -> list[str] | None:
    """The naive policy's replies for a row under an attack: the goal's calls, then the
    user's (None when the row has no injection goal)."""
    from awm_envs import load_environment
    from awm_train.episode import row_perturbation
    from awm_train.safety import EnvSafety
    from awm_train.tokens import reference_replies

    name, seed = row_perturbation(extra)
    if name is None:
        return None
    goal = EnvSafety(load_environment(extra["env_id"])).plan(task, name, seed).applied.goal
    if goal is None:
        return None
    steps = [*goal.steps, *(task.reference_solution or [])]
    return reference_replies(task.model_copy(update={"reference_solution": steps}))


class MixedClient(TransformersServerClient):  # type: ignore[misc]
    """Per task, trajectories 0, 2... sampled from the model (or, under an attack, the naive
    policy's); 1, 3... its reference solution.

    Decided per task (the prompt names it), not per call order, so every GRPO group of
    an even ``n`` holds both kinds however verl interleaves the trajectories.
    """

    def __init__(self, config: Any, sampled_tokens: int, data_dir: Path) -> None:
        super().__init__(config)
        self.sampled_tokens = sampled_tokens
        self.data_dir = data_dir
        self._scripts: dict[str, list[str] | None] = {}  # request id -> replies (None: sampled)
        self._per_task: Counter[str] = Counter()

    def _script_for(self, prompt_ids: list[int]) -> list[str] | None:
        from awm_envs import load_environment
        from awm_train.tokens import reference_replies

        text = self.generator.tokenizer.decode(prompt_ids)
        extra, task = next(
            (row, t)
            for row in _rows(self.data_dir)
            for t in load_environment(row["env_id"]).tasks
            if t.id == row["task_id"] and (t.user.opening if t.user else t.instruction) in text
        )
        self._per_task[task.id] += 1
        if self._per_task[task.id] % 2:
            return _naive_replies(extra, task)
        return reference_replies(task)

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kw: Any
    ) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        if request_id not in self._scripts:
            self._scripts[request_id] = self._script_for(list(prompt_ids))
        script, gen = self._scripts[request_id], self.generator
        if script is None:
            out = await gen.generate(
                list(prompt_ids), max_new_tokens=self.sampled_tokens, temperature=1.0
            )
            ids, log_probs = out.token_ids, out.log_probs
        else:
            text = script.pop(0) if script else "Done."
            ids = [
                *gen.tokenizer.encode(text, add_special_tokens=False),
                gen.tokenizer.eos_token_id,
            ]
            log_probs = await gen.score(list(prompt_ids), ids)
        return TokenOutput(token_ids=ids, log_probs=log_probs, stop_reason="completed")


def _user_replies(data_dir: Path) -> list[str]:
    """The scripted user replies of the prepared tasks (none for single-instruction ones)."""
    from awm_core.conversation import strip_stop
    from awm_envs import load_environment

    return [
        strip_stop(r)
        for row in _rows(data_dir)
        for t in load_environment(row["env_id"]).tasks
        if t.id == row["task_id"] and t.user is not None
        for r in t.user.replies or []
        if strip_stop(r)
    ]


def _episode_summary(line: dict[str, Any]) -> dict[str, Any]:
    """An episode-log line without the model's text: ids, reward, verdict, perturbation."""
    plan = line.get("perturbation") or {}
    goal = plan.get("goal") or {}
    return {
        **{k: line.get(k) for k in ("env_id", "task_id", "reward", "verdict", "violations")},
        "perturbation": plan.get("name"),
        "seed": plan.get("seed"),
        "goal": goal.get("id"),
        "injections_shown": len((plan.get("record") or {}).get("placed") or []),
        "goal_reached": bool(((line.get("safety") or {}).get("goal_check") or {}).get("reached")),
    }


def agent_loop_file(data_dir: Path) -> Path:
    """The shipped ``awm_agent`` entry with an episode log in ``data_dir`` (absolute)."""
    import yaml

    from awm_train.recipes import agent_loop_config

    (entry,) = yaml.safe_load(agent_loop_config().read_text())
    path = data_dir / "agent_loop.yaml"
    path.write_text(yaml.safe_dump([{**entry, "episode_log": str(data_dir / "episodes.jsonl")}]))
    return path


class _LocalWorkerGroup:
    """verl's ``ActorRolloutRefWorker`` in this process, with the one attribute the trainer reads."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self._dispatch_info = {"actor": [0]}  # one data-parallel rank

    def compute_log_prob(self, batch: Any) -> Any:
        return self.worker.compute_log_prob(batch)

    def update_actor(self, batch: Any) -> Any:
        return self.worker.update_actor(batch)


def compose_config(model_dir: Path, data_dir: Path, *, n: int, prompts: int) -> Any:
    import verl
    from hydra import compose, initialize_config_dir

    response_length = 400
    overrides = [
        "algorithm.adv_estimator=grpo",
        "trainer.use_v1=true",
        "trainer.v1.trainer_mode=sync",
        "trainer.device=cpu",
        "trainer.total_training_steps=1",
        f"data.train_files={data_dir / 'train.parquet'}",
        f"data.val_files={data_dir / 'train.parquet'}",
        f"data.train_batch_size={prompts}",
        "data.max_prompt_length=8192",
        f"data.max_response_length={response_length}",
        "data.return_raw_chat=true",
        "data.dataloader_num_workers=0",
        f"actor_rollout_ref.model.path={model_dir}",
        "actor_rollout_ref.model.use_remove_padding=false",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.actor.fsdp_config.strategy=fsdp2",
        "actor_rollout_ref.actor.fsdp_config.dtype=float32",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile=false",
        "+actor_rollout_ref.actor.fsdp_config.mixed_precision="
        "{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}",
        "actor_rollout_ref.actor.use_kl_loss=false",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={prompts}",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.actor.ppo_epochs=1",
        "actor_rollout_ref.actor.optim.lr=1e-3",
        f"actor_rollout_ref.rollout.n={n}",
        "actor_rollout_ref.rollout.name=vllm",  # never started: MixedClient generates
        "actor_rollout_ref.rollout.temperature=1.0",
        "actor_rollout_ref.rollout.calculate_log_probs=true",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
        "actor_rollout_ref.rollout.prompt_length=8192",
        f"actor_rollout_ref.rollout.response_length={response_length}",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_file(data_dir)}",
        "actor_rollout_ref.rollout.agent.default_agent_loop=awm_agent",
        "transfer_queue.enable=true",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    ]
    config_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(config_name="ppo_trainer", overrides=overrides)


def main(model_dir: Path, data_dir: Path) -> dict[str, Any]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    import ray
    import torch.distributed as dist
    import transfer_queue as tq
    from omegaconf import OmegaConf
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ
    from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
    from verl.workers.engine_workers import ActorRolloutRefWorker

    timings["imports_s"] = time.perf_counter() - t0

    n, prompts = 2, len(_rows(data_dir))  # every prepared row in the one batch
    config = compose_config(model_dir, data_dir, n=n, prompts=prompts)
    OmegaConf.resolve(config)

    t = time.perf_counter()
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=True)
    tq.init(config.transfer_queue)
    timings["ray_tq_s"] = time.perf_counter() - t

    # verl's trainer object, its replay buffer, tokenizer and dataloader (RLHFDataset);
    # _setup's resource pools and remote worker groups are what this machine lacks
    trainer = PPOTrainerSync(config)
    trainer._init_tokenizer()
    trainer._init_dataloader()
    trainer.global_steps = 1
    trainer.curr_step_profile = False
    trainer.distillation_config = None
    trainer.reward_loop_manager = type("NoRewardWorkers", (), {"reward_loop_worker_handles": []})()
    trainer.checkpoint_manager = type("NoWeightSync", (), {"sleep_replicas": lambda self: None})()
    refills: list[int] = []
    refill = trainer.replay_buffer.refill_fn
    trainer.replay_buffer.refill_fn = lambda k: refills.append(k) or refill(k)

    # the actor: verl's ActorRolloutRefWorker (FSDP2, fp32, gloo), world size 1, in this process
    t = time.perf_counter()
    os.environ.update(
        RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="29556"
    )
    dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp()}", rank=0, world_size=1)
    worker = ActorRolloutRefWorker(config.actor_rollout_ref, role="actor")
    worker.init_model()
    trainer.actor_rollout_wg = _LocalWorkerGroup(worker)
    timings["actor_init_s"] = time.perf_counter() - t

    # verl's agent-loop manager: one AgentLoopWorkerTQ Ray actor running AWMAgentLoop
    t = time.perf_counter()
    trainer.agent_loop_manager = AgentLoopManagerTQ.create(
        config=config, llm_client=MixedClient(config, sampled_tokens=16, data_dir=data_dir)
    )
    timings["agent_loop_workers_s"] = time.perf_counter() - t

    # the step: PPOTrainer.step (prepare → sample → balance → old log-probs → GRPO → update)
    before = {n_: p.detach().clone() for n_, p in worker.actor.engine.module.named_parameters()}
    captured: dict[str, Any] = {}
    compute_advantage = trainer._compute_advantage

    def spy_advantage(batch: Any, metrics: dict[str, Any]) -> Any:
        captured["before_adv"] = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["rollout_log_probs", "old_log_probs", "response_mask", "prompts"],
        )
        out = compute_advantage(batch, metrics)
        captured["after_adv"] = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["advantages", "rm_scores", "response_mask", "loss_mask", "uid"],
        )
        captured["keys"], captured["tags"] = list(batch.keys), list(batch.tags)
        return out

    trainer._compute_advantage = spy_advantage
    t = time.perf_counter()
    metrics: dict[str, Any] = {}
    timing_raw: dict[str, float] = {}
    batch = trainer.step(metrics, timing_raw)
    timings["step_s"] = time.perf_counter() - t
    timings.update({f"step.{k}_s": v for k, v in timing_raw.items()})

    changed = sum(
        int(not torch.equal(before[n_], p.detach()))
        for n_, p in worker.actor.engine.module.named_parameters()
    )
    keys, tags = captured["keys"], captured["tags"]
    real = [i for i, tag in enumerate(tags) if not tag.get("is_padding", False)]
    pre, post = captured["before_adv"], captured["after_adv"]

    parity = 0.0
    for i in real:
        rollout = pre["rollout_log_probs"][i].float()
        old = pre["old_log_probs"][i].float()
        parity = max(parity, (rollout - old).abs().max().item())

    session_adv: dict[str, set[float]] = {}
    rewards: dict[str, float] = {}
    mask_ok = True
    for i in real:
        key = keys[i]
        session = key.rsplit("_", 1)[0]
        mask = post["response_mask"][i]
        adv = post["advantages"][i]
        mask_ok &= bool(torch.equal(mask, post["loss_mask"][i])) and int(mask.sum()) > 0
        session_adv.setdefault(session, set()).update(
            round(float(a), 5) for a, m in zip(adv, mask, strict=True) if m
        )
        rewards[session] = float(post["rm_scores"][i].sum())
    # the assistant turns each row's prompt shows, by session in turn order: the history
    # window configured in agent_loop.yaml must be what truncated them
    tokenizer = trainer.tokenizer
    shown: dict[str, list[tuple[int, int]]] = {}
    for i in real:
        session, turn = keys[i].rsplit("_", 1)
        text = tokenizer.decode(pre["prompts"][i].tolist(), skip_special_tokens=False)
        shown.setdefault(session, []).append((int(turn), text.count("<|im_start|>assistant")))
    uids = {keys[i].split("_", 1)[0] for i in real}
    rows_per_session = Counter(keys[i].rsplit("_", 1)[0] for i in real)
    return {
        "timings": {k: round(v, 1) for k, v in timings.items()},
        "prompts": prompts,
        "n": n,
        "groups": len(uids),
        "trajectories": len(rows_per_session),
        "rows": len(real),
        "padding_rows": len(tags) - len(real),
        "rows_trained": len(batch.keys),
        "rows_per_trajectory": sorted(rows_per_session.values()),
        "refills": refills,
        "rewards": sorted(rewards.values()),
        "session_advantages": {k: sorted(v) for k, v in session_adv.items()},
        "masks_ok": mask_ok,
        "assistant_turns_shown": {k: [c for _, c in sorted(v)] for k, v in shown.items()},
        "max_logprob_diff": parity,
        # a conversational task's scripted user replies seen in the rows' prompts (observations)
        "user_replies_in_prompts": sum(
            any(
                reply in tokenizer.decode(pre["prompts"][i].tolist())
                for reply in _user_replies(data_dir)
            )
            for i in real
        ),
        # the agent loop's record of every trajectory: its perturbation and safety verdicts
        "episodes": [
            _episode_summary(json.loads(line))
            for line in (data_dir / "episodes.jsonl").read_text().splitlines()
        ],
        "parameters_changed": changed,
        "parameters": len(before),
        "metrics": {
            k: float(v)
            for k, v in metrics.items()
            if k.startswith(("actor/pg_loss", "actor/grad_norm", "actor/entropy"))
            and isinstance(v, int | float)
        },
    }


if __name__ == "__main__":
    result = main(Path(sys.argv[1]), Path(sys.argv[2]))
    print("V1_STEP " + json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # Ray, gloo and FSDP teardown can hang at interpreter exit
