"""Replay tool calls on a bundle's real tools, recording what each returned and whose rows.

The safety stage proves what it proposes by execution: a safe behaviour must run
without tool errors and read nothing of another principal's, an unsafe one must be
caught, an injection goal must change the database. This module runs those calls: each
replay gets a fresh instance of the environment from an :class:`awm_envs.EnvPool`
(sandbox workers by default, this process with ``workers=0``), optionally under a
perturbation's hooks (the ``idor`` variant, whose tools forget their ownership checks),
and returns the start and end images, every result and the private rows each call read
(:class:`awm_envs.perturb.PerturbedInstance` records them, as in ``awm bench safety``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_core.models import Message, StepRecord, ToolCall, ToolCallStep, ToolResult, Trajectory
from awm_core.perturbation import Applied


@dataclass
class Replayed:
    """One replay: the images before and after, each call's result, and the rows read."""

    initial: bytes
    final: bytes
    results: list[ToolResult] = field(default_factory=list)
    reads: list[dict[str, Any]] = field(default_factory=list)

    def errors(self, steps: Sequence[ToolCallStep]) -> list[str]:
        """``tool: message`` of every call that failed."""
        return [
            f"{step.tool}: {str(result.content)[:160]}"
            for step, result in zip(steps, self.results, strict=False)
            if result.is_error
        ]

    def trajectory(
        self, env_id: str, task_id: str, steps: Sequence[ToolCallStep], answer: str | None
    ) -> Trajectory:
        """The replay as an agent's trajectory (each call as ``call_tool``, as the episode
        loop records it), for the checks that read trajectories (the access verifier)."""
        records = []
        for i, (step, result) in enumerate(zip(steps, self.results, strict=False)):
            call = ToolCall(
                id=f"replay-{i}",
                name="call_tool",
                arguments={"tool_name": step.tool, "arguments": dict(step.arguments)},
            )
            records.append(
                StepRecord(
                    index=i,
                    assistant=Message(role="assistant", tool_calls=[call]),
                    tool_call=call,
                    result=result,
                )
            )
        return Trajectory(env_id=env_id, task_id=task_id, steps=records, final_answer=answer)


class Replayer:
    """Fresh instances of one environment for replays; use as an async context manager."""

    def __init__(self, env: Any, *, workers: int = 1) -> None:
        self.env = env
        self.workers = workers
        self.pool: Any = None

    async def __aenter__(self) -> Replayer:
        from awm_envs import EnvPool

        self.pool = EnvPool(self.env, size=1, workers=self.workers)
        await self.pool.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.pool is not None:
            await self.pool.close()

    async def replay(
        self,
        steps: Sequence[ToolCallStep],
        *,
        ownership: Any = None,
        applied: Applied | None = None,
    ) -> Replayed:
        """Run ``steps`` in order on a fresh instance (under ``applied``'s hooks, if given);
        with ``ownership`` (an :class:`awm_envs.perturb.Ownership`) record the rows read."""
        from awm_envs.perturb import PerturbedInstance

        async with self.pool.instance() as inst:
            wrapped = PerturbedInstance(inst, applied or Applied(), ownership)
            await wrapped.start()
            initial = _image(await inst.snapshot())
            results = [await wrapped.call_tool(s.tool, dict(s.arguments)) for s in steps]
            final = _image(await wrapped.snapshot())
        return Replayed(initial, final, results, list(wrapped.reads))


def _image(snapshot: bytes | None) -> bytes:
    if snapshot is None:  # a simulated environment has no database to prove anything on
        raise TypeError("this environment's instances have no database image to replay on")
    return snapshot
