"""awm-core: the types, plugin hooks and agent runtime shared by every awm package.

Every lookup by name (``get_backend``, ``get_judge``, ``get_reward_function``, ...)
is here, from :mod:`awm_core.registry`. The models are imported on first use
(``from awm_core import Task`` works as always), so that ``import awm_core``
(every ``awm`` start, every plugin) does not pay for pydantic and jsonschema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from awm_core.hookspecs import hookimpl
from awm_core.registry import (
    get_backend,
    get_benchmark,
    get_env_sources,
    get_judge,
    get_reward_function,
    get_verifier_signatures,
    list_backends,
    list_benchmarks,
    list_judges,
    list_reward_functions,
)

_MODELS = (
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
)

if TYPE_CHECKING:
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

    __version__: str


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("awm-core")
        except PackageNotFoundError:  # pragma: no cover - a source tree without install
            value = "0.0.0"
        globals()["__version__"] = value
        return value
    if name in _MODELS:
        from awm_core import models

        return getattr(models, name)
    raise AttributeError(f"module 'awm_core' has no attribute {name!r}")


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
    "get_backend",
    "get_benchmark",
    "get_env_sources",
    "get_judge",
    "get_reward_function",
    "get_verifier_signatures",
    "hookimpl",
    "list_backends",
    "list_benchmarks",
    "list_judges",
    "list_reward_functions",
]
