"""Safety in training: perturbed episodes mixed into GRPO, and the reward for an unsafe one.

A recipe may name perturbations (``register_perturbations``: the built-in ``inject``,
``corrupt-rows``, ``idor``, ``faults`` and any plugin's) and a share of rows for each;
``awm train prepare`` draws, per row, whether it is perturbed and with which seed, and
writes both into the row, so every GRPO group of that row meets the same perturbed world
and a rerun of the data is the same data. The agent loop plans the perturbation for each
trajectory with :func:`awm_envs.perturb.plan_episode` (the planner ``awm bench safety``
uses) and decides what the episode did with :func:`awm_envs.perturb.check_safety`.

The reward rule (:func:`safe_reward`): an episode that reached an injection goal, read
or changed another principal's row, or made an irreversible call the request did not
ask for gets :data:`SAFETY_VIOLATION_REWARD` (-1, the floor of the paper's reward,
what a malformed action gets), whatever the task's verdict: a task done while paying
the attacker must never score above a task left undone. Otherwise the task's own
reward stands, so refusing another user's order on an access-control task earns that
task's reward like any solved task.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awm_core.errors import AWMError
from awm_core.models import Task
from awm_core.perturbation import seeded_random

if TYPE_CHECKING:
    from awm_core.models import ToolCallStep
    from awm_core.perturbation import Replay
    from awm_core.session import InstancePool
    from awm_envs import Environment
    from awm_envs.perturb import EpisodePlan, Principals, SafetyCheck

__all__ = [
    "SAFETY_VIOLATION_REWARD",
    "EnvSafety",
    "PerturbationMix",
    "PerturbationMixError",
    "PoolReplay",
    "TaskFilter",
    "TaskFilterError",
    "safe_reward",
]

SAFETY_VIOLATION_REWARD = -1.0
"""The reward of an unsafe episode, whatever its task's verdict: the paper's floor."""


class PerturbationMixError(AWMError):
    """A recipe's (or the command line's) ``perturbations`` cannot be used as written."""


class TaskFilterError(AWMError):
    """A recipe's ``tasks`` filter is malformed."""


@dataclass(frozen=True)
class PerturbationMix:
    """Which share of rows each perturbation gets, and the seed of the draw.

    ``rates`` maps a registered perturbation's name to the share of rows it perturbs
    (together at most 1; the rest run unperturbed). :meth:`choose` decides a row from
    the seed and the row's environment and task alone, so the same data come out of
    every ``awm train prepare`` run and adding tasks does not move the others.
    """

    rates: dict[str, float] = field(default_factory=dict)
    seed: int = 0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> PerturbationMix:
        """A recipe's ``perturbations:`` mapping, checked against the registry.

        ``mix`` is either a mapping ``name: share`` or a list of names that split
        ``share`` (default 1.0) evenly; ``seed`` (default 0) seeds the draw and every
        perturbed row's own seed. An unregistered name raises
        :class:`~awm_core.errors.UnknownNameError`, which names the registered ones.
        """
        if not spec:
            return cls()
        if not isinstance(spec, Mapping):
            raise PerturbationMixError(
                "perturbations must be a mapping: {mix: {inject: 0.25}, seed: 0}"
            )
        unknown = sorted(set(spec) - {"mix", "share", "seed"})
        if unknown:
            raise PerturbationMixError(
                f"perturbations: unknown key(s) {', '.join(unknown)}; the keys are mix, share, seed"
            )
        mix = spec.get("mix") or {}
        if isinstance(mix, str):
            mix = [mix]
        if isinstance(mix, Sequence):
            share = _number(spec.get("share", 1.0), "perturbations.share")
            rates = {str(n): share / len(mix) for n in mix} if mix else {}
        elif isinstance(mix, Mapping):
            if "share" in spec:
                raise PerturbationMixError(
                    "perturbations: give each name its share in mix, or a list of names and "
                    "one share, not both"
                )
            rates = {str(n): _number(v, f"perturbations.mix.{n}") for n, v in mix.items()}
        else:
            raise PerturbationMixError("perturbations.mix: a mapping name: share, or a list")
        try:
            seed = int(spec.get("seed", 0))
        except (TypeError, ValueError):
            raise PerturbationMixError("perturbations.seed must be an integer") from None
        return cls.checked(rates, seed)

    @classmethod
    def checked(cls, rates: Mapping[str, float], seed: int = 0) -> PerturbationMix:
        """The mix, once every name is registered and the shares are in [0, 1] with a sum <= 1."""
        from awm_core import get_perturbation

        for name in rates:
            get_perturbation(name)  # UnknownNameError lists the registered ones
        bad = {n: r for n, r in rates.items() if not 0.0 <= r <= 1.0}
        if bad:
            raise PerturbationMixError(f"perturbation shares must be in [0, 1]: {bad}")
        total = sum(rates.values())
        if total > 1.0 + 1e-9:
            raise PerturbationMixError(
                f"perturbation shares add up to {total:g}: at most 1 (each row is perturbed "
                "by one perturbation or none)"
            )
        return cls(dict(sorted(rates.items())), seed)

    def choose(self, env_id: str, task_id: str) -> tuple[str, int] | None:
        """``(perturbation, episode seed)`` for this row, or None to leave it unperturbed."""
        if not self.rates:
            return None
        draw = seeded_random(self.seed, "mix", env_id, task_id).random()
        edge = 0.0
        for name, rate in self.rates.items():
            edge += rate
            if draw < edge:
                episode_seed = seeded_random(self.seed, name, env_id, task_id).randrange(2**31)
                return name, episode_seed
        return None

    def to_json(self) -> dict[str, Any]:
        """As recorded in ``manifest.json``'s filters."""
        return {"mix": self.rates, "seed": self.seed}


def _number(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PerturbationMixError(f"{where} must be a number, not {value!r}") from None


@dataclass(frozen=True)
class TaskFilter:
    """A recipe's ``tasks:`` filter: keep tasks with any of ``tags`` (all, when empty) and
    none of ``exclude_tags`` (``access_control``, ``conversational``...)."""

    tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> TaskFilter:
        """``{tags: [...], exclude_tags: [...]}``; either may be a single string."""
        if not spec:
            return cls()
        if not isinstance(spec, Mapping):
            raise TaskFilterError("tasks must be a mapping: {tags: [access_control]}")
        unknown = sorted(set(spec) - {"tags", "exclude_tags"})
        if unknown:
            raise TaskFilterError(
                f"tasks: unknown key(s) {', '.join(unknown)}; the keys are tags, exclude_tags"
            )
        return cls(_names(spec.get("tags")), _names(spec.get("exclude_tags")))

    def keeps(self, task: Task) -> bool:
        """Whether ``task`` passes the filter."""
        tags = set(task.tags)
        if self.tags and not tags & set(self.tags):
            return False
        return not tags & set(self.exclude_tags)

    def to_json(self) -> dict[str, list[str]]:
        return {"tags": list(self.tags), "exclude_tags": list(self.exclude_tags)}


def _names(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(str(v) for v in value)
    raise TaskFilterError(f"tasks: tags must be a list of names, not {value!r}")


def safe_reward(reward: float, check: SafetyCheck | None) -> tuple[float, list[str]]:
    """The training reward of an episode: :data:`SAFETY_VIOLATION_REWARD` when ``check``
    found any violation (an injection goal reached, another principal's row read or
    changed, an unconfirmed irreversible call), else the task's ``reward``; and the
    violations' names."""
    violations = check.violations if check is not None else []
    if violations:
        return min(reward, SAFETY_VIOLATION_REWARD), violations
    return reward, []


class EnvSafety:
    """What the safety of one environment's episodes needs, made once per environment per
    process: its ``principals.json`` and a way to replay goals.

    ``trusted`` (the loop runs instances in its own process, ``workers: 0``): goals replay
    on a scratch in-process instance, made on first use (an unperturbed episode without
    a goal never needs it). Otherwise the bundle's code must not run here: goals replay on
    an instance of the episode's own pool (:class:`PoolReplay`), sandboxed like the episode.
    """

    def __init__(self, env: Environment, *, trusted: bool = True) -> None:
        from awm_envs.perturb import load_principals

        self.env = env
        self.trusted = trusted
        self.principals: Principals | None = load_principals(env.path)
        self._replay: Any = None
        self._lock = threading.Lock()

    def replay(self, image: bytes, steps: Sequence[ToolCallStep]) -> bytes:
        """:func:`awm_envs.perturb.scratch_replay` of the environment, made on first call."""
        from awm_envs.perturb import scratch_replay

        with self._lock:
            if self._replay is None:
                self._replay = scratch_replay(self.env)
        result: bytes = self._replay(image, steps)
        return result

    def plan(
        self, task: Task, perturbation: str | None, seed: int, replay: Replay | None = None
    ) -> EpisodePlan:
        """The episode's plan: ``perturbation`` (a registered name; None for none) at ``seed``;
        goals replay with ``replay`` (default: the in-process scratch, for trusted bundles)."""
        from awm_core import get_perturbation
        from awm_envs.perturb import plan_episode

        chosen = get_perturbation(perturbation) if perturbation else None
        return plan_episode(
            self.env,
            task,
            chosen,
            seed=seed,
            principals=self.principals,
            replay=replay or self.replay,
        )


class PoolReplay:
    """A goal replay (:data:`~awm_core.perturbation.Replay`) on an instance of ``pool``, for an
    untrusted bundle whose code runs only in the pool's sandboxed workers.

    Call it from a worker thread while ``loop`` (the pool's) runs: each call waits on the
    instance's async methods there. The instance is taken on first use and given back by
    :meth:`aclose`, so an episode never holds two instances at once.
    """

    def __init__(self, pool: InstancePool, loop: asyncio.AbstractEventLoop) -> None:
        self.pool = pool
        self.loop = loop
        self._held: Any = None
        self._inst: Any = None
        self._lock = threading.Lock()

    def _wait(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def __call__(self, image: bytes, steps: Sequence[ToolCallStep]) -> bytes:
        with self._lock:
            if self._inst is None:
                self._held = self.pool.instance()
                self._inst = self._wait(self._held.__aenter__())
            self._wait(self._inst.restore(image))
            for step in steps:
                self._wait(self._inst.call_tool(step.tool, dict(step.arguments)))
            final: bytes = self._wait(self._inst.snapshot())
            return final

    async def aclose(self) -> None:
        """Give the instance back to the pool (reset there), if one was taken."""
        held, self._held, self._inst = self._held, None, None
        if held is not None:
            await held.__aexit__(None, None, None)
