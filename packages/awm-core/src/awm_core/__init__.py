"""awm-core: the types, plugin hooks and agent runtime shared by every awm package."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("awm-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

from awm_core.hookspecs import hookimpl
from awm_core.models import (
    Complexity,
    EnvironmentManifest,
    Message,
    Reward,
    Scenario,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
    Verdict,
    VerdictLabel,
)

__all__ = [
    "Complexity",
    "EnvironmentManifest",
    "Message",
    "Reward",
    "Scenario",
    "Task",
    "ToolCall",
    "ToolSpec",
    "Trajectory",
    "Verdict",
    "VerdictLabel",
    "__version__",
    "hookimpl",
]
