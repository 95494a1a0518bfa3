"""awm tasks as a SkyRL-gym text environment (``pip install 'awm-verify[skyrl]'``).

Importing this module registers the environment class as ``awm``::

    import skyrl_gym
    import awm_verify.adapters.skyrl  # noqa: F401  (registers "awm")

    env = skyrl_gym.make("awm", env_config={"max_turns": 20},
                         extras={"env_id": "shop", "task_id": "cart_coupon_checkout"})
    prompt, info = env.init([])       # awm's system prompt (meta-tools) and the instruction
    out = env.step(model_text)        # {"observations", "reward", "done", "metadata"}

``extras`` may also be a row written by ``awm train prepare`` (its ``extra_info``
holds ``env_id`` and ``task_id``). ``env_config`` takes :class:`~awm_verify.TaskEnv`'s
settings (``judge``, ``reward``, ``pool_size``, ``workers``), the episode's
``history_window`` and ``max_steps`` (:class:`~awm_core.episode.EpisodeSettings`; the
step budget defaults to ``max_turns``) and ``max_turns``. The reward is 0 until the last step, which carries awm's verified
reward (1 / 0.1 / 0, or -1 when a format check ended the episode).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skyrl_gym.envs import register  # type: ignore[import-not-found, import-untyped, unused-ignore]
from skyrl_gym.envs.base_text_env import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
    BaseTextEnv,
    BaseTextEnvStepOutput,
)

from awm_core.episode import EpisodeSettings
from awm_verify.adapters.bridge import run_sync, shared_env
from awm_verify.gym import GymEpisode

__all__ = ["ENV_ID", "AWMTextEnv"]

ENV_ID = "awm"
_ENV_SETTINGS = ("judge", "reward", "pool_size", "workers")
_EPISODE_SETTINGS = ("history_window", "max_steps")  # fields of awm's EpisodeSettings


def _task_ref(extras: Mapping[str, Any]) -> tuple[str, str]:
    info = extras.get("extra_info") if isinstance(extras.get("extra_info"), Mapping) else extras
    assert isinstance(info, Mapping)
    try:
        return str(info["env_id"]), str(info["task_id"])
    except KeyError:
        raise ValueError(
            "awm env needs extras with env_id and task_id (or a row of `awm train prepare`)"
        ) from None


class AWMTextEnv(BaseTextEnv):  # type: ignore[misc, unused-ignore]  # skyrl-gym is untyped
    """One awm task, one isolated instance, text in and text out (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(env_config or {})
        self.env_id, self.task_id = _task_ref(extras or {})
        self.max_turns = int(config.get("max_turns", EpisodeSettings.max_steps))
        episode = {k: config[k] for k in _EPISODE_SETTINGS if k in config}
        episode.setdefault("max_steps", self.max_turns)
        self.settings = {k: config[k] for k in _ENV_SETTINGS if k in config}
        self.settings["settings"] = EpisodeSettings(**episode)
        self._episode: GymEpisode | None = None

    async def _start(self) -> tuple[GymEpisode, Any]:
        env = await shared_env(self.env_id, **self.settings)
        episode = await env.episode(self.task_id)
        return episode, await episode.reset()

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """awm's prompt for the task (the dataset's prompt is replaced: it must name the tools)."""
        self.close()
        self._episode, obs = run_sync(self._start())
        self.turns = 0
        return obs.messages, {"env_id": self.env_id, "task_id": self.task_id, "tools": obs.tools}

    def step(self, action: str) -> Any:
        if self._episode is None:
            raise RuntimeError("call init() before step()")
        self.turns += 1
        result = run_sync(self._episode.step(action))
        done = result.done or self.turns >= self.max_turns
        metadata = dict(result.info)
        reward = 0.0
        if done:
            rollout = run_sync(self._episode.reward())
            reward = float(rollout.reward)
            metadata.update(verdict=rollout.label, reward=reward)
        return BaseTextEnvStepOutput(
            observations=[] if done else result.messages,
            reward=reward,
            done=done,
            metadata=metadata,
        )

    def close(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            run_sync(episode.close())


register(id=ENV_ID, entry_point=f"{__name__}:AWMTextEnv")
