"""``AWMAgentLoop``: awm environments inside verl 0.9.1's agent-loop rollout (``pip install 'awm-train[verl]'``).

Register it the way verl users do, with an agent-loop config file given to
``actor_rollout_ref.rollout.agent.agent_loop_config_path``::

    - name: awm_agent
      _target_: awm_train.verl_loop.AWMAgentLoop
      judge: code            # or code+llm (needs AWM_JUDGE_MODEL)
      history_window: 3
      workers: 0             # 0: in-process instances (trusted catalog); N: sandboxed workers
      simulator: null        # a model (openai:gpt-4o) to train on the LLM-simulated baseline instead

and rows from ``awm train prepare`` (their ``agent_name`` is ``awm_agent``).
Each trajectory gets a fresh isolated instance from a per-process ``EnvPool``,
generates through ``self.server_manager.generate`` on token ids, runs awm's own
episode loop (parser, step checks, history window), is verified and rewarded
before the instance is released, and returns one ``AgentLoopOutput`` per
assistant turn (history-aware training). Every row carries the reward and
``extra_fields["reward_extra_info"]``: verl's V1 trainer copies the last row's
onto the others and raises (dropping the whole GRPO group) when it is missing.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found, unused-ignore]
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)

from awm_core.contracts import CODE_JUDGE
from awm_core.models import Message, Task
from awm_train.episode import TRAINING_SETTINGS, TrainingEpisode, run_training_episode
from awm_train.policy import TokenPolicy
from awm_train.tokens import GeneratedTokens

__all__ = ["AWMAgentLoop", "VerlServerGenerator", "episode_outputs"]

AGENT_NAME = "awm_agent"


class VerlServerGenerator:
    """verl's ``server_manager`` as an awm :class:`~awm_train.tokens.TokenGenerator`.

    The trainer's sampling parameters win: ``max_new_tokens`` and ``temperature``
    from the policy are ignored, the rollout config decides (as for every verl loop).
    """

    def __init__(self, server_manager: Any, sampling_params: dict[str, Any]) -> None:
        self.server_manager = server_manager
        self.sampling_params = dict(sampling_params)
        self.request_id = uuid.uuid4().hex  # one sticky session per trajectory (prefix cache)
        # the policy versions (trainer steps) the turns were generated with: verl's V1
        # trainer tags every row with them (staleness metrics, off-policy filtering)
        self.weight_versions: dict[str, Any] = {}

    async def generate(
        self, prompt_ids: list[int], *, max_new_tokens: int, temperature: float
    ) -> GeneratedTokens:
        out = await self.server_manager.generate(
            request_id=self.request_id, prompt_ids=prompt_ids, sampling_params=self.sampling_params
        )
        extra = dict(getattr(out, "extra_fields", None) or {})
        if not self.weight_versions:  # as verl's tool agent loop: first turn's min, last's max
            self.weight_versions = {
                "min_global_steps": extra.get("min_global_steps"),
                "max_global_steps": extra.get("max_global_steps"),
            }
        elif extra.get("max_global_steps") is not None:
            self.weight_versions["max_global_steps"] = extra["max_global_steps"]
        return GeneratedTokens(list(out.token_ids), out.log_probs, out.stop_reason)


class _Pools:
    """One ``EnvPool`` per environment per agent-loop worker process, created on first use."""

    def __init__(self) -> None:
        self._pools: dict[tuple[str, int, int, str, str], tuple[Any, Any, str | None]] = {}
        self._lock: asyncio.Lock | None = None

    async def get(
        self,
        env_ref: str,
        *,
        size: int,
        workers: int,
        simulator: str | None = None,
        backend: str = "process",
        ray_options: dict[str, Any] | None = None,
    ) -> tuple[Any, Any, str | None]:
        """``(environment, pool, verifier source)``; a simulated one when ``simulator`` names a model."""
        from awm_envs import EnvPool, SimulatedEnvironment, load_environment

        if self._lock is None:
            self._lock = asyncio.Lock()
        key = (env_ref, size, workers, simulator or "", backend)
        async with self._lock:
            if key not in self._pools:
                real = load_environment(env_ref)
                if simulator:  # no database: verifiers cannot run, an LLM judge decides
                    sim = SimulatedEnvironment(real, simulator)
                    self._pools[key] = (sim, await sim.pool(size).start(), None)
                else:
                    pool = EnvPool(
                        real, size=size, workers=workers, backend=backend, ray_options=ray_options
                    )
                    await pool.start()
                    self._pools[key] = (real, pool, real.verifier_source)
            return self._pools[key]


POOLS = _Pools()


def episode_outputs(
    episode: TrainingEpisode,
    *,
    max_response_tokens: int,
    weight_versions: dict[str, Any] | None = None,
) -> list[Any]:
    """``AgentLoopOutput`` rows for verl, every one with the reward and its extra info.

    ``weight_versions`` (``min_global_steps`` / ``max_global_steps`` of the policy that
    generated the turns) goes on every row: verl's V1 trainer reads it from each row's tags.
    """
    info = {
        k: v
        for k, v in episode.metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
    info["verdict_completed"] = float(episode.metrics.get("verdict") == "Completed")
    outputs = []
    for row in episode.rows:
        metrics = AgentLoopMetrics(
            generate_sequences=float(episode.metrics.get("generate_s", 0.0)),
            tool_calls=float(episode.metrics.get("env_s", 0.0)),
            compute_score=float(episode.metrics.get("verify_s", 0.0)),
        )
        logprobs = row.log_probs[:max_response_tokens] if row.log_probs is not None else None
        outputs.append(
            AgentLoopOutput(
                prompt_ids=row.prompt_ids,
                response_ids=row.response_ids[:max_response_tokens],
                response_mask=row.response_mask[:max_response_tokens],
                response_logprobs=logprobs,
                reward_score=episode.reward,
                num_turns=2 * row.turns + 2,
                metrics=metrics,
                extra_fields={
                    "reward_extra_info": dict(info),
                    "awm_turn": row.turn,
                    **(weight_versions or {}),
                },
            )
        )
    return outputs


@register(AGENT_NAME)
class AWMAgentLoop(AgentLoopBase):  # type: ignore[misc, unused-ignore]  # verl is untyped
    """Rolls out one awm task per call; see the module docstring for the configuration."""

    def __init__(
        self,
        *args: Any,
        judge: str = CODE_JUDGE,
        reward: str = "default",
        history_window: int | None = TRAINING_SETTINGS.history_window,
        max_steps: int = TRAINING_SETTINGS.max_steps,
        pool_size: int = 16,
        workers: int = 0,
        simulator: str | None = None,
        backend: str = "process",
        ray_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.judge = judge
        self.reward = reward
        self.settings = replace(
            TRAINING_SETTINGS, history_window=history_window, max_steps=max_steps
        )
        self.pool_size = pool_size
        self.workers = workers
        self.simulator = simulator
        self.backend = backend
        self.ray_options = dict(ray_options) if ray_options else None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[Any]:
        extra = dict(kwargs.get("extra_info") or {})
        env_id, task_id = str(extra["env_id"]), str(extra["task_id"])
        env, pool, source = await POOLS.get(
            env_id,
            size=self.pool_size,
            workers=self.workers,
            simulator=self.simulator,
            backend=self.backend,
            ray_options=self.ray_options,
        )
        task: Task = next(t for t in env.tasks if t.id == task_id)
        generator = VerlServerGenerator(self.server_manager, sampling_params)
        policy = TokenPolicy(
            generator,
            self.tokenizer,
            name="verl",
            max_prompt_tokens=int(self.rollout_config.prompt_length),
        )
        episode = await run_training_episode(
            pool,
            env,
            task,
            policy,
            judge=self.judge,
            reward=self.reward,
            settings=self.settings,
            verifier_source=source,
        )
        outputs = episode_outputs(
            episode,
            max_response_tokens=int(self.rollout_config.response_length),
            weight_versions=generator.weight_versions,
        )
        if not outputs:  # the model never produced a turn (a generation error): one empty row
            eos = int(self.tokenizer.eos_token_id)
            outputs = [
                AgentLoopOutput(
                    prompt_ids=policy.prompt_ids(
                        [Message(role="user", content=task.instruction)], None
                    ),
                    response_ids=[eos],
                    response_mask=[0],
                    reward_score=episode.reward,
                    num_turns=1,
                    metrics=AgentLoopMetrics(),
                    extra_fields={
                        "reward_extra_info": {"reward": episode.reward},
                        "awm_turn": 0,
                        **generator.weight_versions,
                    },
                )
            ]
        return outputs
