"""Pass@1 on awm's own tasks: roll out every task in an EnvPool, verify, reward, aggregate.

The same path a trainer takes (pool instance -> episode loop -> snapshot ->
sandboxed verifier -> judge -> reward), so an evaluation number and a training
reward can never disagree about what "complete" means.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core import get_judge
from awm_core.contracts import CODE_JUDGE, Judge, UserSimulator
from awm_core.episode import ActingPolicy, EpisodeSettings
from awm_core.models import Complexity, Task, Trajectory
from awm_envs import Environment, EnvPool, load_environment
from awm_verify import rollout_episode

BUCKETS = [c.value for c in Complexity]

PolicyFactory = Callable[[Task], ActingPolicy]


@dataclass
class EpisodeOutcome:
    """One task's rollout as the summary and the report need it."""

    env_id: str
    task_id: str
    complexity: str
    policy: str
    label: str
    reward: float
    termination: str
    termination_reason: str | None
    steps: int
    tool_calls: int
    tool_errors: int
    tool_latencies_s: list[float] = field(default_factory=list)
    expects_refusal: bool = False
    final_answer: str | None = None
    verdict_reasoning: str = ""

    @property
    def passed(self) -> bool:
        return self.label == "Completed"


@dataclass
class EnvReport:
    """Everything measured for one environment and one policy."""

    env_id: str
    policy: str
    outcomes: list[EpisodeOutcome]
    reset_latency_us: dict[str, float]
    wall_s: float

    @property
    def pass_rate(self) -> float:
        return sum(o.passed for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    def pass_rate_by_bucket(self) -> dict[str, tuple[int, int]]:
        """``{bucket: (passed, total)}`` for the buckets that have tasks."""
        table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for o in self.outcomes:
            table[o.complexity][0] += o.passed
            table[o.complexity][1] += 1
        return {b: (table[b][0], table[b][1]) for b in BUCKETS if b in table}

    def reward_distribution(self) -> dict[str, int]:
        return dict(sorted(Counter(f"{o.reward:+.1f}" for o in self.outcomes).items()))

    @property
    def env_calls_per_s(self) -> float:
        latencies = [x for o in self.outcomes for x in o.tool_latencies_s]
        return len(latencies) / sum(latencies) if latencies and sum(latencies) > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id,
            "policy": self.policy,
            "tasks": len(self.outcomes),
            "pass_rate": self.pass_rate,
            "pass_rate_by_complexity": {
                b: {"passed": p, "total": t} for b, (p, t) in self.pass_rate_by_bucket().items()
            },
            "reward_distribution": self.reward_distribution(),
            "env_calls_per_s": round(self.env_calls_per_s, 1),
            "reset_latency_us": self.reset_latency_us,
            "wall_s": round(self.wall_s, 3),
            "episodes": [
                {
                    "task_id": o.task_id,
                    "complexity": o.complexity,
                    "label": o.label,
                    "reward": o.reward,
                    "termination": o.termination,
                    "termination_reason": o.termination_reason,
                    "steps": o.steps,
                    "tool_calls": o.tool_calls,
                    "tool_errors": o.tool_errors,
                    "expects_refusal": o.expects_refusal,
                    "final_answer": o.final_answer,
                }
                for o in self.outcomes
            ],
        }


async def measure_reset_us(pool: EnvPool, n: int = 200) -> dict[str, float]:
    """Median and p99 of ``reset()`` as the caller sees it, on one pooled instance."""
    inst = await pool.acquire()
    samples = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            await inst.reset()
            samples.append((time.perf_counter() - t0) * 1e6)
    finally:
        await pool.release(inst)
    samples.sort()
    return {
        "median": round(statistics.median(samples), 1),
        "p99": round(samples[int(0.99 * (len(samples) - 1))], 1),
    }


def _outcome(
    env_id: str, task: Task, traj: Trajectory, label: str, reward: float, reasoning: str
) -> EpisodeOutcome:
    calls = [s for s in traj.steps if s.tool_call is not None and s.tool_call.name == "call_tool"]
    return EpisodeOutcome(
        env_id=env_id,
        task_id=task.id,
        complexity=task.complexity.value,
        policy=str(traj.metadata.get("policy", "")),
        label=label,
        reward=reward,
        termination=traj.termination.value,
        termination_reason=traj.termination_reason,
        steps=len(traj.steps),
        tool_calls=len(calls),
        tool_errors=sum(1 for s in calls if s.result is not None and s.result.is_error),
        tool_latencies_s=[s.result.latency_s for s in calls if s.result is not None],
        expects_refusal=task.expects_refusal,
        final_answer=traj.final_answer,
        verdict_reasoning=reasoning,
    )


async def evaluate_environment(
    env: Environment | str | Path,
    policy_factory: PolicyFactory,
    *,
    tasks: Sequence[Task] | None = None,
    judge: Judge | str = CODE_JUDGE,
    reward: str = "default",
    pool_size: int = 8,
    workers: int = 0,
    concurrency: int = 8,
    settings: EpisodeSettings = EpisodeSettings(),
    trajectories: list[Trajectory] | None = None,
    on_outcome: Callable[[EpisodeOutcome], None] | None = None,
    on_episode: Callable[[EpisodeOutcome, Trajectory], None] | None = None,
    user_factory: Callable[[Task], UserSimulator | None] | None = None,
) -> EnvReport:
    """Roll out ``tasks`` (default: all) once each and verify every episode.

    ``workers=0`` runs instances in this process (trusted bundles); ``workers>0``
    hosts them in sandbox processes. Finished trajectories are appended to
    ``trajectories`` when a list is given, each with its verdict in
    ``metadata["verdict"]`` (label, reward, reasoning); ``on_outcome`` is called
    as each episode finishes (a progress bar), ``on_episode`` with the trajectory too
    (a run that keeps each episode the moment it ends). ``user_factory`` builds a
    conversational task's user simulator (default: the ``scripted`` one).
    """
    environment = env if isinstance(env, Environment) else load_environment(env)
    judge_obj = get_judge(judge) if isinstance(judge, str) else judge
    chosen = list(tasks if tasks is not None else environment.tasks)
    started = time.perf_counter()
    outcomes: list[EpisodeOutcome] = []
    async with EnvPool(
        environment, size=max(1, min(pool_size, len(chosen) or 1)), workers=workers
    ) as pool:
        limit = asyncio.Semaphore(concurrency)

        async def one(task: Task) -> EpisodeOutcome:
            async with limit:
                done = await rollout_episode(
                    pool,
                    task,
                    policy_factory(task),
                    env_id=environment.id,
                    initial=environment.template,
                    judge=judge_obj,
                    reward=reward,
                    settings=settings,
                    verifier_source=environment.verifier_source,
                    user=user_factory(task) if user_factory and task.user else None,
                )
            reasoning = (
                done.report.verdict.reasoning
                if done.report is not None
                else f"judge failed: {done.judge_error}"
            )
            done.trajectory.metadata["verdict"] = {
                **(done.report.to_record() if done.report is not None else {}),
                "label": done.label,
                "reward": done.reward,
                "reasoning": reasoning,
                "judge": judge_obj.name,
            }
            if trajectories is not None:
                trajectories.append(done.trajectory)
            outcome = _outcome(
                environment.id, task, done.trajectory, done.label, done.reward, reasoning
            )
            if on_episode is not None:
                on_episode(outcome, done.trajectory)
            if on_outcome is not None:
                on_outcome(outcome)
            return outcome

        outcomes = list(await asyncio.gather(*(one(t) for t in chosen)))
        reset = await measure_reset_us(pool)
    policy_name = outcomes[0].policy if outcomes else ""
    return EnvReport(environment.id, policy_name, outcomes, reset, time.perf_counter() - started)
