"""Replay tool calls on fresh instances of an environment, snapshotting the database around them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from awm_core.models import Task, ToolCallStep
from awm_core.session import SyncInstance


class RuntimeEnvironment:
    """An environment loaded by the awm-envs runtime, exactly as agents and trainers see it."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self.tasks: list[Task] = list(env.tasks)
        self.write_tools = {t.name for t in env.tools if (t.method or "GET").upper() != "GET"}
        self.module: ModuleType | None = getattr(getattr(env, "bundle", None), "module", None)
        self.verifier_source: str | None = env.verifier_source

    def instance(self) -> SyncInstance:
        """A fresh in-process instance, driven through its ``*_sync`` methods (no event loop)."""
        inst: SyncInstance = self._env.instance()
        return inst


def open_environment(env_dir: Path) -> RuntimeEnvironment:
    from awm_envs.pool.preflight import check_bundle
    from awm_envs.runtime.environment import load_environment

    # app.py is loaded in a throwaway sandbox first (bundles outside the shipped catalog):
    # an os._exit or a hang at import is a clear problem, not a dead or stuck validator
    check_bundle(env_dir)
    return RuntimeEnvironment(load_environment(env_dir))


@dataclass
class Replay:
    initial: bytes
    final: bytes
    tool_errors: list[str]
    # (is_error, error_type, content) per step: compared by the cross-instance leak check
    results: list[tuple[bool, str | None, Any]] = field(default_factory=list)
    # the database before step ``middle_step`` (see ``snapshot_before`` of :func:`replay_steps`)
    middle: bytes | None = None
    middle_step: int | None = None
    # the calls replayed (what a judge reads for verifiers that only gather evidence)
    steps: list[ToolCallStep] = field(default_factory=list)

    def prefix(self) -> Replay:
        """The replay of the steps before ``middle_step`` alone (same calls, same instance state)."""
        assert self.middle is not None and self.middle_step is not None
        results = self.results[: self.middle_step]
        errors = self.tool_errors[: sum(1 for r in results if r[0])]  # in step order
        return Replay(
            self.initial, self.middle, errors, results, steps=self.steps[: self.middle_step]
        )


def replay_steps(
    env: RuntimeEnvironment, steps: Sequence[ToolCallStep], snapshot_before: int | None = None
) -> Replay:
    inst = env.instance()
    try:
        initial = inst.snapshot_sync()
        errors: list[str] = []
        results: list[tuple[bool, str | None, Any]] = []
        middle: bytes | None = None
        for i, step in enumerate(steps):
            if i == snapshot_before:
                middle = inst.snapshot_sync()
            result = inst.call_tool_sync(step.tool, dict(step.arguments))
            results.append((result.is_error, result.error_type, result.content))
            if result.is_error:
                content = (
                    result.content
                    if isinstance(result.content, str)
                    else json.dumps(result.content, default=str)
                )
                errors.append(
                    f"step {i} {step.tool}: {result.error_type or 'error'}: {content[:300]}"
                )
        return Replay(
            initial, inst.snapshot_sync(), errors, results, middle, snapshot_before, list(steps)
        )
    finally:
        inst.close_sync()


def without_last_write(
    steps: Sequence[ToolCallStep], write_tools: set[str]
) -> list[ToolCallStep] | None:
    for i in range(len(steps) - 1, -1, -1):
        if steps[i].tool in write_tools:
            return [*steps[:i], *steps[i + 1 :]]
    return None
