"""``AWMAgentLoop``: awm environments inside verl 0.9.1's agent-loop rollout (``pip install 'awm-train[verl]'``).

Register it the way verl users do, with an agent-loop config file given to
``actor_rollout_ref.rollout.agent.agent_loop_config_path``::

    - name: awm_agent
      _target_: awm_train.verl_loop.AWMAgentLoop
      judge: code            # or code+llm (needs AWM_JUDGE_MODEL)
      history_window: 3
      workers: 0             # 0: in-process instances (trusted catalog); N: sandboxed workers
      max_environments: null # N: pools for at most N environments, the idle longest closed first
      template: null         # true: sandboxed workers forked from a pre-imported template
      simulator: null        # a model (openai:gpt-4o) to train on the LLM-simulated baseline instead
      user_simulator: scripted  # who plays a conversational task's user: scripted or llm
      user_model: null       # the llm user's own model, served apart from the policy (openai:NAME)
      user_options: null     # more for the simulator's backend, e.g. {base_url: http://HOST:8001/v1}
      checks: null           # StepChecks overrides over the paper's, e.g. {require_reasoning: false}
      system_prompt: null    # a string replacing the episode's system prompt
      examples: null         # worked turns [{role, content}] shown after the system prompt
      episode_log: null      # a JSONL file (relative: in the run folder), one line per trajectory

and rows from ``awm train prepare`` (their ``agent_name`` is ``awm_agent``).
The loop needs verl's V1 trainer (``trainer.use_v1=true``, verl's default): it
returns a list of rows, which only the V1 trainer stores; with the legacy
trainer it refuses to start (:class:`LegacyTrainerError`) rather than crash
later inside verl.


Each trajectory gets a fresh isolated instance from a per-process ``EnvPool``,
generates through ``self.server_manager.generate`` on token ids, runs awm's own
episode loop (parser, step checks, history window), is verified and rewarded
before the instance is released, and returns one ``AgentLoopOutput`` per
assistant turn (history-aware training). Every row carries the reward and
``extra_fields["reward_extra_info"]``: verl's V1 trainer copies the last row's
onto the others and raises (dropping the whole GRPO group) when it is missing.

Each row's environment is found on the node the loop runs on from the row's
bundle reference (:mod:`awm_train.bundles`: catalog id, shared folder,
``AWM_ENV_PATH``, pulled bundle) and must have the digest the data were
prepared from. A bundle that is missing or differs raises a
:class:`~awm_train.bundles.BundleResolutionError`, logged once per process
with the fix: in verl's V1 trainer that marks the trajectory's group as failed
and training goes on without it. That is deliberate: a reward of 0 would train
the policy against an environment the data do not name, and the error, unlike a
0, is in the logs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found, unused-ignore]
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    _agent_loop_registry,
    register,
)

from awm_core.contracts import CODE_JUDGE
from awm_core.episode import EpisodeRun, EpisodeSettings, StepChecks
from awm_core.errors import AWMError
from awm_core.models import Message, Task
from awm_core.registry import get_perturbation, get_user_simulator
from awm_train.bundles import BundleRef, BundleResolver
from awm_train.episode import (
    TRAINING_SETTINGS,
    TrainingEpisode,
    row_perturbation,
    run_training_episode,
)
from awm_train.policy import TokenPolicy
from awm_train.safety import EnvSafety
from awm_train.tokens import GeneratedTokens

__all__ = [
    "AWMAgentLoop",
    "AgentLoopConfigError",
    "LegacyTrainerError",
    "VerlServerGenerator",
    "episode_outputs",
    "episode_record",
    "loop_settings",
    "reward_info",
]

log = logging.getLogger(__name__)

AGENT_NAME = "awm_agent"
VERSION_KEYS = ("min_global_steps", "max_global_steps")


class AgentLoopConfigError(AWMError):
    """The ``awm_agent`` entry of the agent-loop YAML has a setting awm does not know."""


class LegacyTrainerError(AWMError):
    """``AWMAgentLoop`` was started by verl's legacy trainer, which cannot store its rows."""


def loop_settings(
    *,
    history_window: int | None = TRAINING_SETTINGS.history_window,
    max_steps: int = TRAINING_SETTINGS.max_steps,
    checks: Mapping[str, Any] | None = None,
    system_prompt: str | None = None,
) -> EpisodeSettings:
    """The episode settings of the loop: training's (the paper's checks) with the YAML's overrides.

    ``checks`` maps :class:`~awm_core.episode.StepChecks` field names to booleans,
    applied over :meth:`StepChecks.paper`; an unknown name or a non-boolean value
    is an :class:`AgentLoopConfigError` naming the valid ones.
    """
    step_checks = StepChecks.paper()
    if checks:
        known = [f.name for f in dataclasses.fields(StepChecks)]
        given = {str(k): v for k, v in checks.items()}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise AgentLoopConfigError(
                f"awm_agent checks: unknown check(s) {', '.join(unknown)}; "
                f"the checks are {', '.join(known)}"
            )
        bad = sorted(k for k, v in given.items() if not isinstance(v, bool))
        if bad:
            raise AgentLoopConfigError(f"awm_agent checks: {', '.join(bad)} must be true or false")
        step_checks = dataclasses.replace(step_checks, **given)
    settings = dataclasses.replace(
        TRAINING_SETTINGS, history_window=history_window, max_steps=max_steps, checks=step_checks
    )
    if system_prompt is not None:
        if not isinstance(system_prompt, str) or not system_prompt.strip():
            raise AgentLoopConfigError("awm_agent system_prompt must be a non-empty string")
        settings = dataclasses.replace(settings, system_prompt=system_prompt)
    return settings


def _policy_version(kwargs: Mapping[str, Any]) -> int:
    """The weights version a rollout sampled at verl step ``global_steps`` runs on.

    verl's V1 trainer syncs weights version ``k`` at the end of step ``k`` (version
    0 at start-up), so a prompt sampled for step ``k`` is generated by version
    ``k - 1``; without ``global_steps`` (tests, other drivers) it is version 0.
    """
    try:
        return max(int(kwargs.get("global_steps", 1)) - 1, 0)
    except (TypeError, ValueError):
        return 0


def _versions(seen: Mapping[str, Any], fallback: int) -> dict[str, int]:
    """``min_global_steps``/``max_global_steps`` for every row, never None.

    verl's V1 trainer makes an ``int`` array of them for its staleness metrics,
    and a None (a trajectory that generated nothing, a server that reports no
    version) crashes the step.
    """
    return {k: int(seen[k]) if seen.get(k) is not None else fallback for k in VERSION_KEYS}


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
        self._pools: dict[tuple[str, str, int, int, str, str], tuple[Any, Any, str | None]] = {}
        self._fleets: dict[str, Any] = {}  # EnvFleet by its settings (max_environments set)
        self._lock: asyncio.Lock | None = None
        self.bundles = BundleResolver()
        self._safety: dict[tuple[str, str, bool], EnvSafety] = {}

    def safety(self, env: Any, *, trusted: bool) -> EnvSafety:
        """The environment's principals and goal replay, made once per process; goals of an
        untrusted bundle (sandboxed workers, Ray actors) replay in its pool, not here."""
        key = (str(env.path), env.id, trusted)
        if key not in self._safety:
            self._safety[key] = EnvSafety(env, trusted=trusted)
        return self._safety[key]

    async def get(
        self,
        ref: BundleRef,
        *,
        size: int,
        workers: int,
        simulator: str | None = None,
        backend: str = "process",
        ray_options: dict[str, Any] | None = None,
        max_environments: int | None = None,
        template: bool | None = None,
    ) -> tuple[Any, Any, str | None]:
        """``(environment, pool, verifier source)``; a simulated one when ``simulator`` names a model.

        With ``max_environments`` the pools come from an :class:`~awm_envs.EnvFleet`: at
        most that many environments keep a pool in this process, the one idle longest
        closed first (a run over hundreds of generated environments); without it every
        environment met keeps its pool for the run. ``template`` forks sandboxed workers
        from a pre-imported template (default: ``AWM_WORKER_TEMPLATE``; a fleet's default:
        on when ``workers`` > 0).

        Raises a :class:`~awm_train.bundles.BundleResolutionError` when the row's
        bundle is not on this node with the row's digest.
        """
        from awm_envs import EnvFleet, EnvPool, SimulatedEnvironment

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            real = self.bundles.resolve(ref)
            if max_environments and not simulator:
                settings = json.dumps(
                    [max_environments, size, workers, backend, ray_options, template],
                    sort_keys=True,
                    default=str,
                )
                fleet = self._fleets.get(settings)
                if fleet is None:
                    fleet = self._fleets[settings] = EnvFleet(
                        max_environments=max_environments,
                        size=size,
                        workers=workers,
                        template=template,
                        backend=backend,
                        ray_options=ray_options,
                    )
                return real, fleet.pool(real.path), real.verifier_source
            key = (str(real.path), ref.digest, size, workers, simulator or "", backend)
            if key not in self._pools:
                if simulator:  # no database: verifiers cannot run, an LLM judge decides
                    sim = SimulatedEnvironment(real, simulator)
                    self._pools[key] = (sim, await sim.pool(size).start(), None)
                else:
                    pool = EnvPool(
                        real,
                        size=size,
                        workers=workers,
                        backend=backend,
                        ray_options=ray_options,
                        template=template,
                    )
                    await pool.start()
                    self._pools[key] = (real, pool, real.verifier_source)
            return self._pools[key]


POOLS = _Pools()


def reward_info(episode: TrainingEpisode) -> dict[str, float]:
    """The trajectory's numeric metrics as ``reward_extra_info`` (what verl logs per trajectory)."""
    info: dict[str, float] = {
        k: float(v)
        for k, v in episode.metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }
    info["reward"] = float(episode.reward)
    info["verdict_completed"] = float(episode.metrics.get("verdict") == "Completed")
    return info


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
    info = reward_info(episode)
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


def episode_record(
    episode: TrainingEpisode,
    policy: TokenPolicy,
    env_id: str,
    task_id: str,
    versions: Mapping[str, Any],
) -> dict[str, Any]:
    """One line of the episode log: what a trajectory scored, why it ended, what the model wrote.

    verl's console metrics are batch means; this is the per-trajectory record a
    learning curve (format-error rate, completion) and a failed turn are read from.
    """
    texts = [
        policy.tokenizer.decode(t.response_ids, skip_special_tokens=False) for t in policy.turns
    ]
    keep = (
        "verdict",
        "termination",
        "violation",
        "turns",
        "tool_calls",
        "format_error",
        "response_tokens",
        "generate_s",
        "env_s",
        "verify_s",
        "violations",
    )
    trajectory = episode.rollout.trajectory if episode.rollout is not None else None
    meta = trajectory.metadata if trajectory is not None else {}
    return {
        "step": versions.get("max_global_steps"),
        "env_id": env_id,
        "task_id": task_id,
        "reward": episode.reward,
        **{k: episode.metrics[k] for k in keep if k in episode.metrics},
        "error": episode.metrics.get("error"),
        # what a perturbed row's episode met and what the safety verdicts found
        **{k: meta[k] for k in ("perturbation", "safety") if k in meta},
        "responses": [t[:_LOGGED_CHARS] for t in texts],
    }


_LOGGED_CHARS = 2000


def _episode_log_path(value: str | None, config: Any) -> Path | None:
    """``episode_log`` as a path; a relative one lands in the run folder (``trainer.default_local_dir``)."""
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        trainer = config.get("trainer") if hasattr(config, "get") else None
        run_dir = trainer.get("default_local_dir") if trainer is not None else None
        path = Path(str(run_dir or ".")) / path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _append_line(path: Path, record: Mapping[str, Any]) -> None:
    """One JSON line in one ``write`` on an append-only descriptor: workers never interleave lines."""
    data = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


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
        max_environments: int | None = None,
        template: bool | None = None,
        simulator: str | None = None,
        backend: str = "process",
        ray_options: dict[str, Any] | None = None,
        checks: Mapping[str, Any] | None = None,
        system_prompt: str | None = None,
        examples: Sequence[Mapping[str, Any]] | None = None,
        episode_log: str | None = None,
        user_simulator: str = "scripted",
        user_model: str | None = None,
        user_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        trainer = self.config.get("trainer") if hasattr(self.config, "get") else None
        if trainer is not None and trainer.get("use_v1", True) is False:
            raise LegacyTrainerError(
                "AWMAgentLoop needs verl's V1 trainer: it returns one row per assistant turn "
                "(history-aware training), a list that only the V1 trainer's agent-loop worker "
                "stores; verl's legacy trainer takes one output per sample and would fail on "
                "`output.extra_fields`. Set trainer.use_v1=true (verl's default; every awm "
                "recipe sets it)."
            )
        self.judge = judge
        self.reward = reward
        self.settings = loop_settings(
            history_window=history_window,
            max_steps=max_steps,
            checks=checks,
            system_prompt=system_prompt,
        )
        self.pool_size = pool_size
        self.workers = workers
        self.max_environments = max_environments
        self.template = template
        self.simulator = simulator
        self.backend = backend
        self.ray_options = dict(ray_options) if ray_options else None
        # worked turns shown after the system prompt (a small model's format), never trained on
        self.examples = [Message.model_validate(dict(m)) for m in examples or ()]
        self.episode_log = _episode_log_path(episode_log, self.config)
        # a conversational task's user: the task's script, or a model of its own (never the
        # policy being trained: it is served apart, e.g. by `awm serve-llm` or vLLM)
        self.user_simulator = user_simulator
        self.user_model = user_model
        self.user_options = dict(user_options or {})

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[Any]:
        extra = dict(kwargs.get("extra_info") or {})
        task_id = str(extra["task_id"])
        env, pool, source = await POOLS.get(
            BundleRef.from_row(extra),
            size=self.pool_size,
            workers=self.workers,
            simulator=self.simulator,
            backend=self.backend,
            ray_options=self.ray_options,
            max_environments=self.max_environments,
            template=self.template,
        )
        task: Task = next(t for t in env.tasks if t.id == task_id)
        generator = VerlServerGenerator(self.server_manager, sampling_params)
        policy = TokenPolicy(
            generator,
            self.tokenizer,
            name="verl",
            max_prompt_tokens=int(self.rollout_config.prompt_length),
            examples=self.examples,
        )
        user = None
        if task.user is not None:
            options = {
                **self.user_options,
                **({"model": self.user_model} if self.user_model else {}),
            }
            user = get_user_simulator(self.user_simulator, task, **options)
        # the row's perturbation (awm train prepare drew it with its seed): every trajectory
        # of the row's GRPO group meets the same perturbed world; a simulated environment
        # has no database to perturb or to check for unsafe changes
        perturbation, perturbation_seed = row_perturbation(extra)
        if perturbation:
            # raised, not scored 0: a node without the plugin that registers the row's
            # perturbation must fail the group (logged by verl), as a missing bundle does
            get_perturbation(perturbation)
        trusted = self.workers == 0 and self.backend == "process"  # instances in this process
        safety = None if self.simulator else POOLS.safety(env, trusted=trusted)
        if perturbation and safety is None:
            log.warning("%s/%s: no perturbation on a simulated environment", env.id, task.id)
            perturbation = None
        episode = await run_training_episode(
            pool,
            env,
            task,
            policy,
            judge=self.judge,
            reward=self.reward,
            settings=self.settings,
            verifier_source=source,
            user=user,
            safety=safety,
            perturbation=perturbation,
            perturbation_seed=perturbation_seed,
        )
        versions = _versions(generator.weight_versions, _policy_version(kwargs))
        outputs = episode_outputs(
            episode,
            max_response_tokens=int(self.rollout_config.response_length),
            weight_versions=versions,
        )
        if not outputs:  # the model never produced a turn (a generation error): one empty row
            logprobs = bool(sampling_params.get("logprobs"))
            outputs = [self._no_turn_row(policy, task, episode, versions, logprobs=logprobs)]
        if self.episode_log is not None:
            _append_line(
                self.episode_log, episode_record(episode, policy, env.id, task.id, versions)
            )
        return outputs

    def _no_turn_row(
        self,
        policy: TokenPolicy,
        task: Task,
        episode: TrainingEpisode,
        versions: dict[str, int],
        *,
        logprobs: bool,
    ) -> Any:
        """A row verl stores like any other (reward, extra info, version tags) that trains nothing.

        Its one response token is masked out, so it adds no loss, but it keeps the
        trajectory's reward in its GRPO group and its metrics in the step's.
        """
        eos = int(self.tokenizer.eos_token_id)
        return AgentLoopOutput(
            prompt_ids=policy.prompt_ids([EpisodeRun.trajectory_opening(task)], None),
            response_ids=[eos],
            response_mask=[0],
            # the same fields as the other rows of the batch (verl stores them column-wise)
            response_logprobs=[0.0] if logprobs else None,
            reward_score=episode.reward,
            num_turns=1,
            metrics=AgentLoopMetrics(),
            extra_fields={"reward_extra_info": reward_info(episode), "awm_turn": 0, **versions},
        )


# Registered by name for rows that name ``awm_agent`` without an agent-loop file, but
# never over an entry that file made: verl fills its registry from the file *before*
# hydra imports this module (on the first instantiate), and verl's ``register``
# overwrites unconditionally, so a decorator here would drop every setting of the
# file (examples, checks, judge...) from the second trajectory on.
if AGENT_NAME not in _agent_loop_registry:
    register(AGENT_NAME)(AWMAgentLoop)
