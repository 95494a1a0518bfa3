"""awm tasks as a PrimeIntellect ``verifiers`` environment (``pip install 'awm-verify[verifiers]'``).

A ``vf.MultiTurnEnv`` whose dataset is an awm environment's tasks and whose
rollouts run on isolated awm instances; ``env_response`` hands each model turn
to :class:`awm_verify.GymEpisode` (awm's parser, checks and tools) and the
rubric's one reward function is awm's verified reward::

    import verifiers as vf
    from awm_verify.adapters.prime import load_environment

    env = load_environment("shop")                 # what `vf-eval` / prime-rl load
    results = env.evaluate_sync(client=vf.ClientConfig(api_base_url=URL, api_key_var="KEY"),
                                model="my-model", num_examples=-1, rollouts_per_example=4)

Built on the classic ``Environment`` API of verifiers 0.2 (``MultiTurnEnv``,
``Rubric``, ``@vf.stop``/``@vf.cleanup``). verifiers 0.3 and 0.4 moved to a new
stack and pin ``mcp<2`` / ``mcp==2.0.0``, which awm-envs' MCP server
(``mcp>=2.3``) cannot share a venv with; the extra pins ``verifiers>=0.2,<0.3``.
The model sees the whole conversation (verifiers' linear rollouts), not awm's
history window.
"""

from __future__ import annotations

from typing import Any

import verifiers as vf  # type: ignore[import-not-found, import-untyped, unused-ignore]
from datasets import Dataset  # type: ignore[import-not-found, import-untyped, unused-ignore]

from awm_core.contracts import CODE_JUDGE
from awm_core.episode import EpisodeSettings
from awm_verify.adapters.bridge import shared_env
from awm_verify.gym import GymEpisode, TaskEnv

__all__ = ["AWMVerifiersEnv", "load_environment"]


class AWMVerifiersEnv(vf.MultiTurnEnv):  # type: ignore[misc, unused-ignore]  # verifiers is untyped
    """Every task of one awm environment as a ``verifiers`` multi-turn environment."""

    def __init__(
        self,
        env: str = "shop",
        *,
        tasks: list[str] | None = None,
        max_turns: int = EpisodeSettings.max_steps,
        judge: str = CODE_JUDGE,
        pool_size: int = 8,
        workers: int = 0,
        **kwargs: Any,
    ) -> None:
        self.env_ref = env
        self.settings: dict[str, Any] = {
            "judge": judge,
            "pool_size": pool_size,
            "workers": workers,
            "settings": EpisodeSettings(max_steps=max_turns),
        }
        catalog = TaskEnv(env, pool_size=1)  # reads the tasks; its pool is never started
        chosen = [catalog.task(t) for t in tasks] if tasks else catalog.tasks
        rows = [
            {
                "prompt": catalog.initial_messages(task),
                "answer": task.reference_answer or "",
                "info": {"env_id": catalog.environment.id, "task_id": task.id},
            }
            for task in chosen
        ]
        self._episodes: dict[str, GymEpisode] = {}
        rubric = vf.Rubric(funcs=[self.awm_reward], weights=[1.0])
        super().__init__(
            dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns, **kwargs
        )

    def _episode(self, state: Any) -> GymEpisode:
        return self._episodes[str(state["trajectory_id"])]

    async def setup_state(self, state: Any) -> Any:
        env = await shared_env(self.env_ref, **self.settings)
        episode = await env.episode(str(state["info"]["task_id"]))
        await episode.reset()
        self._episodes[str(state["trajectory_id"])] = episode
        return state

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        last = messages[-1] if messages else {}
        text = last.get("content") if isinstance(last, dict) else getattr(last, "content", "")
        episode = self._episode(state)
        step = await episode.step(str(text or ""))
        state.setdefault("awm_steps", []).append(step.info)
        if step.done:
            state["final_env_response"] = step.messages
        return step.messages

    async def awm_reward(self, state: Any, **kwargs: Any) -> float:
        """awm's verified reward for the rollout (its instance is released first)."""
        episode = self._episodes.pop(str(state["trajectory_id"]), None)
        if episode is None:
            return 0.0
        rollout = await episode.reward()
        state["awm_verdict"] = rollout.label
        return float(rollout.reward)

    @vf.cleanup  # type: ignore[untyped-decorator, unused-ignore]
    async def release_instance(self, state: Any) -> None:
        """An errored or timed-out rollout still gives its instance back."""
        if state.get("error") is None:
            return  # scored next: awm_reward releases the instance after the final snapshot
        episode = self._episodes.pop(str(state.get("trajectory_id")), None)
        if episode is not None:
            await episode.close()


def load_environment(env: str = "shop", **kwargs: Any) -> AWMVerifiersEnv:
    """The entry point ``verifiers`` tools look for (``vf-eval``, prime-rl)."""
    return AWMVerifiersEnv(env, **kwargs)
