"""A perturbed instance: one episode's instance seen through a planned perturbation.

The wrapper is where a perturbation meets the environment, below the episode loop
(which never knows): it starts the instance from the perturbed database, lets the
plan answer or rewrite tool calls, and records which private rows of which principal
each call returned. The wrapped instance is an ordinary pool instance, so the pool's
reset on release undoes everything; the bundle and the other instances never see it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from awm_core.models import ToolCallStep, ToolResult, ToolSpec
from awm_core.perturbation import Applied, CallInfo, Replay
from awm_core.session import EnvInstance
from awm_envs.perturb.principals import Ownership


class PerturbedInstance:
    """``inner`` with ``applied`` in force; implements :class:`awm_core.session.EnvInstance`.

    ``reads`` gets one entry per successful call that returned private rows:
    ``{"call": index, "tool": name, "rows": [[table, key, owner], ...]}``.
    Call :meth:`start` before the episode (it installs the perturbed database).
    """

    def __init__(
        self, inner: EnvInstance, applied: Applied, ownership: Ownership | None = None
    ) -> None:
        self.inner = inner
        self.applied = applied
        self.ownership = ownership
        self.reads: list[dict[str, Any]] = []
        self.calls = 0

    async def start(self) -> None:
        """Install the perturbed starting database, if the plan has one."""
        if self.applied.image is not None:
            restore = getattr(self.inner, "restore", None)
            if restore is None:
                raise TypeError(f"{type(self.inner).__name__} cannot restore a database image")
            await restore(self.applied.image)

    async def list_tools(self) -> list[ToolSpec]:
        """The inner instance's tools, unchanged."""
        return await self.inner.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the call through the plan's hooks; record the private rows it returned."""
        info = CallInfo(self.calls, name, dict(arguments or {}))
        self.calls += 1
        result = self.applied.before_call(info) if self.applied.before_call else None
        if result is None:
            result = await self.inner.call_tool(name, arguments)
            if self.applied.after_call is not None:
                result = self.applied.after_call(info, result)
        if self.ownership is not None and not result.is_error:
            rows = self.ownership.rows_in(result.content)
            if rows:
                self.reads.append(
                    {"call": info.index, "tool": name, "rows": [r.to_json() for r in rows]}
                )
        return result

    async def snapshot(self) -> bytes | None:
        """The inner instance's database now."""
        return await self.inner.snapshot()

    def foreign_reads(self) -> list[list[Any]]:
        """``[table, key, owner]`` of every row of another principal a call returned."""
        if self.ownership is None:
            return []
        acting = str(self.ownership.principals.acting)
        return [row for read in self.reads for row in read["rows"] if str(row[2]) != acting]


def scratch_replay(env: Any) -> Replay:
    """A :data:`~awm_core.perturbation.Replay` on one scratch in-process instance of ``env``
    (an :class:`awm_envs.Environment`), kept for the caller's lifetime; thread-safe."""
    inst = env.instance()
    lock = threading.Lock()

    def replay(image: bytes, steps: Sequence[ToolCallStep]) -> bytes:
        with lock:
            inst.restore_sync(image)
            for step in steps:
                inst.call_tool_sync(step.tool, step.arguments)
            snapshot: bytes = inst.snapshot_sync()
            return snapshot

    return replay
