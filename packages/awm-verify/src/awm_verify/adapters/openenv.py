"""awm tasks as an OpenEnv environment (``pip install 'awm-verify[openenv]'``).

Serve any awm environment with OpenEnv's own server, and drive it with OpenEnv's
clients (``GenericEnvClient``, ``EnvClient`` subclasses, its web UI)::

    import uvicorn
    from awm_verify.adapters.openenv import AWMAction, AWMObservation, app_for

    app = app_for("shop")                    # openenv.core.env_server.create_app(...)
    uvicorn.run(app, port=8000)

    # client side
    async with GenericEnvClient(base_url="http://localhost:8000") as env:
        first = await env.reset(task_id="cart_coupon_checkout")   # messages: awm's prompt
        result = await env.step({"text": model_text})             # tool output, done, reward

Every WebSocket session gets its own :class:`AWMEnvironment` and, per episode,
its own isolated instance; sessions of one server share the environment's pool.
The reward is ``None`` until the step that ends the episode, which carries awm's
verified reward (1 / 0.1 / 0, or -1 when a format check ended it).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from openenv.core.env_server.http_server import (  # type: ignore[import-not-found, unused-ignore]
    create_app,
)
from openenv.core.env_server.interfaces import (  # type: ignore[import-not-found, unused-ignore]
    Environment,
)
from openenv.core.env_server.types import (  # type: ignore[import-not-found, unused-ignore]
    Action,
    Observation,
    State,
)
from pydantic import Field

from awm_verify.adapters.bridge import run_sync, shared_env
from awm_verify.gym import GymEpisode, StepResult

__all__ = ["AWMAction", "AWMEnvironment", "AWMObservation", "AWMState", "app_for"]


class AWMAction(Action):  # type: ignore[misc, unused-ignore]  # openenv is untyped for mypy
    """The model's raw output for one turn; awm's parser reads the tool call from it."""

    text: str = Field(description="The assistant turn as the model wrote it (Hermes tool call).")


class AWMObservation(Observation):  # type: ignore[misc, unused-ignore]
    """The messages the model reads next (the prompt after a reset, tool output after a step)."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    env_id: str = ""
    task_id: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    info: dict[str, Any] = Field(
        default_factory=dict, description="The step: call, violation, termination, verdict."
    )


class AWMState(State):  # type: ignore[misc, unused-ignore]
    env_id: str = ""
    task_id: str = ""
    verdict: str | None = None


class AWMEnvironment(Environment):  # type: ignore[misc, unused-ignore]
    """One OpenEnv session over one awm environment; ``reset(task_id=...)`` picks the task."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env: str = "shop", *, default_task: str | None = None, **settings: Any):
        super().__init__()
        self.env_ref = env
        self.default_task = default_task
        self.settings = settings
        self._episode: GymEpisode | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._state = AWMState(env_id=env)

    # --- async: what OpenEnv's server calls (it prefers these when overridden)
    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> AWMObservation:
        self._release()
        env = await shared_env(self.env_ref, **self.settings)
        task = task_id or self.default_task or env.tasks[0].id
        self._episode = await env.episode(task)
        self._loop = asyncio.get_running_loop()
        obs = await self._episode.reset()
        self._state = AWMState(
            episode_id=episode_id or uuid.uuid4().hex, env_id=obs.env_id, task_id=obs.task_id
        )
        return AWMObservation(
            messages=obs.messages,
            env_id=obs.env_id,
            task_id=obs.task_id,
            tools=obs.tools,
            info={"instruction": obs.instruction},
            metadata={"instruction": obs.instruction},
        )

    async def step_async(
        self, action: AWMAction, timeout_s: float | None = None, **kwargs: Any
    ) -> AWMObservation:
        if self._episode is None:
            raise RuntimeError("reset() before step()")
        result: StepResult = await self._episode.step(action.text)
        self._state.step_count += 1
        reward = None
        metadata = dict(result.info)
        if result.done:
            rollout = await self._episode.reward()
            reward = float(rollout.reward)
            self._state.verdict = rollout.label
            metadata["verdict"] = rollout.label
        return AWMObservation(
            messages=result.messages,
            env_id=self._state.env_id,
            task_id=self._state.task_id,
            done=result.done,
            reward=reward,
            info=metadata,  # OpenEnv keeps ``metadata`` off the wire; ``info`` travels
            metadata=metadata,
        )

    # --- sync: the abstract API, for in-process use without a server
    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> AWMObservation:
        return run_sync(self.reset_async(seed=seed, episode_id=episode_id, **kwargs))

    def step(self, action: AWMAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        return run_sync(self.step_async(action, timeout_s=timeout_s, **kwargs))

    @property
    def state(self) -> AWMState:
        return self._state

    def close(self) -> None:
        self._release()

    def _release(self) -> None:
        """Give the instance back on the loop that owns it (OpenEnv closes from any thread)."""
        episode, loop = self._episode, self._loop
        self._episode = None
        if episode is None or loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.create_task(episode.close())
        else:
            asyncio.run_coroutine_threadsafe(episode.close(), loop)


def app_for(env: str = "shop", *, max_concurrent_envs: int = 64, **settings: Any) -> Any:
    """OpenEnv's FastAPI app serving ``env`` (a catalog name or bundle path)."""
    return create_app(
        lambda: AWMEnvironment(env, **settings),
        AWMAction,
        AWMObservation,
        env_name=f"awm-{env}",
        max_concurrent_envs=max_concurrent_envs,
    )
