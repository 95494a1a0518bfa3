"""Pydantic models for everything that crosses a package boundary or a file.

Each model is versioned through :mod:`awm_core.schemas`; bump ``SCHEMA_VERSION``
there when a change is not backwards compatible.
"""

from awm_core.models.manifest import CreatedWith, EnvironmentManifest
from awm_core.models.message import Message, Role, ToolCall
from awm_core.models.scenario import Scenario
from awm_core.models.task import (
    Complexity,
    NegativeExample,
    Task,
    ToolCallStep,
    complexity_for_calls,
)
from awm_core.models.tool import ToolSpec
from awm_core.models.trajectory import (
    StepRecord,
    Termination,
    TokenUsage,
    ToolResult,
    Trajectory,
)
from awm_core.models.verdict import Reward, Verdict, VerdictLabel
from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult

__all__ = [
    "Complexity",
    "CreatedWith",
    "EnvironmentManifest",
    "Message",
    "NegativeExample",
    "Reward",
    "Role",
    "Scenario",
    "StepRecord",
    "Task",
    "Termination",
    "TokenUsage",
    "ToolCall",
    "ToolCallStep",
    "ToolResult",
    "ToolSpec",
    "Trajectory",
    "Verdict",
    "VerdictLabel",
    "VerifierError",
    "VerifierErrorKind",
    "VerifierResult",
    "complexity_for_calls",
]
