"""The protocol between the agent loop and an environment.

awm-envs implements it for in-process instances and MCP clients; the episode
loop in awm-core only ever sees this protocol, so any backend that can list and
call tools (a benchmark converter, a remote MCP server) can be driven by it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from awm_core.models import ToolResult, ToolSpec


@runtime_checkable
class EnvSession(Protocol):
    """One isolated environment instance as the agent sees it."""

    async def list_tools(self) -> list[ToolSpec]:
        """The tools of this environment, with input schemas."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; failures come back as ``ToolResult(is_error=True)``, never raise."""
        ...
