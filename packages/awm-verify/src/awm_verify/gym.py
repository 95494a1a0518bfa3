"""Gym-style episodes over awm tasks: ``reset()``, ``step(text)``, ``reward()``.

Trainers outside verl (OpenEnv, SkyRL-gym, PrimeIntellect ``verifiers``, a
hand-written loop) own the model and hand the environment the text it wrote.
This module gives them that shape without a second agent loop: a
:class:`GymEpisode` wraps :class:`awm_core.episode.EpisodeRun` (the loop that
``run_episode``, ``awm run``, ``awm bench`` and awm-train use), so the parser,
the step-level format checks, the history window and the tools are the same,
and :meth:`GymEpisode.reward` scores with :func:`awm_verify.verify_rollout`,
the scorer of every other rollout::

    async with TaskEnv("shop") as env:
        episode = await env.episode("cart_coupon_checkout")
        obs = await episode.reset()                 # instruction, tools, prompt messages
        while not (step := await episode.step(model(obs.messages))).done:
            obs.messages += step.messages           # the tool result the model reads next
        rollout = await episode.reward()            # verdict and reward; instance released

Each episode holds one isolated instance from the environment's pool between
``reset()`` and ``reward()`` (or ``close()``).
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core.contracts import CODE_JUDGE, Judge
from awm_core.conversation import SEND_MESSAGE_TO_USER
from awm_core.episode import CONVERSATION_PROMPT, EpisodeRun, EpisodeSettings, meta_tools
from awm_core.llm.base import ChatResponse
from awm_core.models import Message, Task, Termination, Trajectory
from awm_core.registry import get_user_simulator
from awm_core.session import EnvInstance
from awm_core.toolcalls import get_format, openai_tool
from awm_verify.rewards import RewardFn
from awm_verify.rollout import Rollout, verify_rollout

__all__ = ["GymEpisode", "Observation", "StepResult", "TaskEnv", "message_dicts"]


def message_dicts(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as the ``{"role", "content"}`` dicts chat templates and OpenAI clients take."""
    out = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.name and m.role == "tool":
            d["name"] = m.name
        if m.tool_call_id:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


@dataclass
class Observation:
    """What ``reset()`` returns: the task and the prompt a model starts from."""

    env_id: str
    task_id: str
    instruction: str
    messages: list[dict[str, Any]]  # system (with the meta-tools) and user: the model's prompt
    tools: list[dict[str, Any]]  # the meta-tools, for clients that pass tools natively


@dataclass
class StepResult:
    """What ``step(text)`` returns."""

    observation: str | None  # the tool result the model reads next; None when nothing ran
    messages: list[dict[str, Any]]  # the turn's messages after the assistant's (tool results)
    done: bool
    info: dict[str, Any] = field(default_factory=dict)  # step index, call, violation, termination


class GymEpisode:
    """One task on one fresh instance, driven by text; see the module docstring."""

    def __init__(self, env: TaskEnv, task: Task) -> None:
        self.env = env
        self.task = task
        self._stack: AsyncExitStack | None = None
        self._run: EpisodeRun | None = None
        self._started = 0.0
        self._result: Rollout | None = None
        self._instance: EnvInstance | None = None

    @property
    def trajectory(self) -> Trajectory:
        if self._run is None:
            raise RuntimeError("call reset() first")
        return self._run.trajectory

    @property
    def done(self) -> bool:
        return self._run is not None and self._run.done

    async def reset(self) -> Observation:
        """Take a fresh instance (releasing any previous one) and start the task."""
        await self.close()
        self._stack = AsyncExitStack()
        instance = await self._stack.enter_async_context(self.env.pool.instance())
        self._result = None
        self._started = time.perf_counter()
        env = self.env
        user = None
        if self.task.user is not None:  # a conversational task: its user answers plain turns
            user = get_user_simulator(env.user_simulator, self.task, **env.user_options)
        self._run = EpisodeRun(
            instance,
            self.task,
            settings=env.settings,
            policy_name=env.policy_name,
            env_id=env.environment.id,
            user=user,
        )
        self._instance = instance
        return Observation(
            env_id=env.environment.id,
            task_id=self.task.id,
            instruction=self.task.instruction,
            messages=message_dicts(self._run.prompt()),
            # the meta-tools as OpenAI tool dicts whatever the format: a Hermes prompt
            # lists them in its system message too, a native client passes these
            tools=[openai_tool(t) for t in self._run.meta_tools],
        )

    def prompt(self) -> list[dict[str, Any]]:
        """The next turn's prompt, truncated to the history window as at inference."""
        if self._run is None:
            raise RuntimeError("call reset() first")
        return message_dicts(self._run.prompt())

    async def step(self, action: str, *, latency_s: float = 0.0) -> StepResult:
        """Parse ``action`` (the model's raw text) with the loop's parser and act on it."""
        if self._run is None:
            raise RuntimeError("call reset() first")
        before = len(self._run.trajectory.messages)
        step = await self._run.step(ChatResponse(content=action), latency_s=latency_s)
        after = self._run.trajectory.messages[before + 1 :]  # what follows the assistant turn
        info: dict[str, Any] = {"step": step.index}
        if step.tool_call is not None:
            info["call"] = step.tool_call.name
        if step.violation:
            info["violation"] = step.violation
        if step.result is not None and (
            step.tool_call is None or step.tool_call.name == SEND_MESSAGE_TO_USER
        ):  # the observation is the simulated user's reply, not a tool's
            info["user_reply"] = step.result.content
        if self._run.done:
            traj = self._run.trajectory
            info["termination"] = traj.termination.value
            if traj.termination_reason:
                info["termination_reason"] = traj.termination_reason
        return StepResult(
            observation=after[-1].content if after else None,
            messages=message_dicts(after),
            done=self._run.done,
            info=info,
        )

    async def reward(self) -> Rollout:
        """End the episode if needed, release the instance and score the trajectory.

        An episode stopped before its final answer ends as ``MAX_STEPS`` (what a
        trainer's turn budget means). Calling it again returns the same result.
        """
        if self._result is not None:
            return self._result
        if self._run is None or self._stack is None or self._instance is None:
            raise RuntimeError("call reset() first")
        run = self._run
        if not run.done:
            run.end(Termination.MAX_STEPS, "stopped by the caller before a final answer")
        final = await self._instance.snapshot()
        await self.close()
        env = self.env
        self._result = await verify_rollout(
            self.task,
            run.trajectory,
            initial=env.environment.template,
            final=final,
            judge=env.judge,
            reward=env.reward,
            verifier_source=env.verifier_source,
            started=self._started,
        )
        return self._result

    async def close(self) -> None:
        """Release the instance (it is reset for the next episode); safe to call twice."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()


class TaskEnv:
    """An awm environment handing out gym-style episodes (see the module docstring).

    ``env`` is a catalog name, a bundle path or a loaded ``awm_envs.Environment``;
    ``workers`` > 0 runs instances in sandboxed worker processes (untrusted bundles);
    ``settings`` are the episode loop's (step budget, history window, format, checks).
    """

    def __init__(
        self,
        env: str | Path | Any,
        *,
        pool_size: int = 8,
        workers: int = 0,
        judge: Judge | str = CODE_JUDGE,
        reward: RewardFn | str = "default",
        settings: EpisodeSettings = EpisodeSettings(),
        policy_name: str = "gym",
        user_simulator: str = "scripted",
        user_options: dict[str, Any] | None = None,
    ) -> None:
        from awm_envs import EnvPool, load_environment

        self.environment: Any = load_environment(env) if isinstance(env, str | Path) else env
        self.pool = EnvPool(self.environment, size=pool_size, workers=workers)
        self.judge, self.reward = judge, reward
        self.settings = settings
        self.policy_name = policy_name
        # who plays a conversational task's user: a registered simulator and its options
        # (``llm`` with ``{"model": SPEC}``); tasks without a user section ignore it
        self.user_simulator = user_simulator
        self.user_options = dict(user_options or {})
        self.verifier_source: str | None = self.environment.verifier_source
        self._started = False

    @property
    def tasks(self) -> list[Task]:
        return list(self.environment.tasks)

    def task(self, task: Task | str) -> Task:
        if isinstance(task, Task):
            return task
        for t in self.tasks:
            if t.id == task:
                return t
        known = ", ".join(t.id for t in self.tasks)
        raise KeyError(f"{self.environment.id} has no task {task!r}; known: {known}")

    def initial_messages(self, task: Task | str) -> list[dict[str, Any]]:
        """The prompt an episode of ``task`` starts from (system with the meta-tools, user)."""
        form = get_format(self.settings.fmt)
        task = self.task(task)
        base = self.settings.system_prompt
        if task.user is not None:
            base = f"{base}\n\n{CONVERSATION_PROMPT}"
        system = form.system_prompt(base, meta_tools(task))
        return message_dicts(
            [
                Message(role="system", content=system),
                EpisodeRun.trajectory_opening(task),
            ]
        )

    async def start(self) -> TaskEnv:
        if not self._started:
            await self.pool.start()
            self._started = True
        return self

    async def episode(self, task: Task | str) -> GymEpisode:
        """A new episode of ``task`` (a :class:`Task` or its id); call ``reset()`` to begin."""
        await self.start()
        return GymEpisode(self, self.task(task))

    async def close(self) -> None:
        if self._started:
            await self.pool.close()
            self._started = False

    async def __aenter__(self) -> TaskEnv:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
