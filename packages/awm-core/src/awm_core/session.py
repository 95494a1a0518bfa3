"""The protocols between the agent loop, a rollout and an environment instance.

:class:`EnvSession` is what the agent sees (list and call tools); the episode
loop in awm-core only ever needs that. :class:`EnvInstance` is one isolated
instance as a rollout sees it: a session whose state can be read back for
verification. awm-envs implements it for in-process, sandboxed and simulated
instances; a benchmark whose state is not a database (BFCL, τ², MCP-Universe)
implements it with ``snapshot()`` returning None, and a rollout then skips the
database diff and the verifier and leaves the verdict to the judge.

Every awm-envs instance also has ``*_sync`` twins of its methods, for code
without an event loop (docs/environment-format.md); :class:`SyncInstance` is
that view, for callers such as bundle validation that replay calls in a plain
loop.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from awm_core.models import ToolResult, ToolSpec

__all__ = ["EnvInstance", "EnvSession", "InstancePool", "SyncInstance"]


@runtime_checkable
class EnvSession(Protocol):
    """One isolated environment instance as the agent sees it."""

    async def list_tools(self) -> list[ToolSpec]:
        """The tools of this environment, with input schemas."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; failures come back as ``ToolResult(is_error=True)``, never raise."""
        ...


@runtime_checkable
class EnvInstance(EnvSession, Protocol):
    """One isolated instance as a rollout sees it: a session whose state can be read back."""

    async def snapshot(self) -> bytes | None:
        """The database now, as a complete SQLite image; None when the environment has no
        database (its state lives elsewhere, e.g. in a benchmark's own classes)."""
        ...


class InstancePool(Protocol):
    """Hands out fresh instances of one environment (``awm_envs.EnvPool``, a simulated
    environment's pool): ``async with pool.instance() as inst``, reset on release."""

    def instance(self) -> AbstractAsyncContextManager[EnvInstance]:
        """Acquire an instance for the ``async with`` block; it goes back (reset) after."""
        ...


@runtime_checkable
class SyncInstance(Protocol):
    """The ``*_sync`` view of an instance, for code without an event loop (an in-process
    ``awm_envs`` instance; a sandboxed one from a thread other than its pool's loop)."""

    def call_tool_sync(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Sync form of :meth:`EnvSession.call_tool`."""
        ...

    def snapshot_sync(self) -> bytes:
        """Sync form of :meth:`EnvInstance.snapshot` (awm-envs instances always have a database)."""
        ...

    def close_sync(self) -> None:
        """Release the instance; it cannot be used afterwards."""
        ...
