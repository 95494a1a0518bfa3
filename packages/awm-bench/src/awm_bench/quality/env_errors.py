"""Environment errors in rollouts: tool calls that failed on the environment's side, per tool.

Kept apart from the agent's own faults (malformed calls, unknown tools, invalid
arguments, not-found ids).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from awm_bench.quality.evidence import clip
from awm_core.models import Trajectory
from awm_core.models.trajectory import StepRecord, Termination

# error_type values produced by the environment's side (awm_envs.runtime.dispatch: 5xx ->
# tool_error; a dead instance or worker -> environment_error; a sandbox limit -> timeout)
ENV_ERROR_TYPES = frozenset(
    {"tool_error", "environment_error", "timeout", "internal_error", "server_error"}
)
_HTTP_5XX = re.compile(r"\b(5\d\d)\b[^.\n]{0,40}\b(error|internal|server|unavailable)", re.I)


def tool_of(step: StepRecord) -> str:
    """The environment tool a step called (through ``call_tool`` or directly)."""
    call = step.tool_call
    if call is None:
        return ""
    if call.name == "call_tool":
        return str(call.arguments.get("tool_name") or "?")
    return call.name


def classify_step(step: StepRecord) -> str | None:
    """``"env"`` (the environment failed), ``"agent"`` (the agent's fault), ``"ok"``, or None (no call)."""
    if step.tool_call is None:
        return None
    if step.violation is not None:
        return "agent"  # malformed JSON, unknown tool, schema-invalid arguments, ...
    result = step.result
    if result is None:
        return "agent"
    if not result.is_error:
        return "ok"
    if result.error_type in ENV_ERROR_TYPES:
        return "env"
    if result.error_type is None and _HTTP_5XX.search(str(result.content)):
        return "env"  # an error recorded without a type (e.g. from another harness)
    return "agent"


@dataclass
class ToolErrors:
    """Calls of one tool in the rollouts, and how many failed on each side."""

    calls: int = 0
    env_errors: int = 0
    agent_errors: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass
class EnvErrors:
    """Environment errors seen in one environment's rollouts."""

    episodes: int = 0
    tool_calls: int = 0
    env_errors: int = 0
    agent_errors: int = 0
    env_error_episodes: int = 0  # ended by, or judged as, an environment error
    by_tool: dict[str, ToolErrors] = field(default_factory=dict)

    @property
    def env_error_rate(self) -> float:
        return self.env_errors / self.tool_calls if self.tool_calls else 0.0

    def add(self, traj: Trajectory) -> None:
        """Count one trajectory's tool calls."""
        self.episodes += 1
        env_episode = traj.termination == Termination.ENVIRONMENT_ERROR
        verdict = traj.metadata.get("verdict")
        if isinstance(verdict, dict) and verdict.get("label") == "Environment Error":
            env_episode = True
        for step in traj.steps:
            kind = classify_step(step)
            if kind is None or (step.tool_call is not None and step.tool_call.name == "list_tools"):
                continue
            tool = self.by_tool.setdefault(tool_of(step), ToolErrors())
            tool.calls += 1
            self.tool_calls += 1
            if kind == "env":
                self.env_errors += 1
                tool.env_errors += 1
                env_episode = True
                if len(tool.examples) < 3 and step.result is not None:
                    tool.examples.append(clip(str(step.result.content), 200))
            elif kind == "agent":
                self.agent_errors += 1
                tool.agent_errors += 1
        self.env_error_episodes += env_episode

    def to_json(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "tool_calls": self.tool_calls,
            "env_errors": self.env_errors,
            "env_error_rate": round(self.env_error_rate, 4),
            "agent_errors": self.agent_errors,
            "env_error_episodes": self.env_error_episodes,
            "by_tool": {
                name: {
                    "calls": t.calls,
                    "env_errors": t.env_errors,
                    "agent_errors": t.agent_errors,
                    "examples": t.examples,
                }
                for name, t in sorted(
                    self.by_tool.items(), key=lambda kv: (-kv[1].env_errors, kv[0])
                )
            },
        }


def count_env_errors(trajectories: Iterable[Trajectory]) -> dict[str, EnvErrors]:
    """Environment errors per environment id (see :func:`classify_step`)."""
    out: dict[str, EnvErrors] = {}
    for traj in trajectories:
        out.setdefault(traj.env_id, EnvErrors()).add(traj)
    return out
