"""The shape of a failed tool call, shared by every instance class (and light to import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awm_core.models import ToolResult


def error_result(error_type: str, message: str, latency_s: float = 0.0) -> ToolResult:
    """The shape of every failed call: ``is_error`` with a message the agent can act on."""
    from awm_core.models import ToolResult

    return ToolResult(content=message, is_error=True, error_type=error_type, latency_s=latency_s)
