"""What a verifier run produced: a verdict and evidence, or a typed failure.

These live in awm-core because judges, rewards and trainers read them, and a plugin
that implements a judge must be able to type against them without awm-verify.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class VerifierErrorKind(StrEnum):
    """Why a verifier produced no usable result."""

    EXCEPTION = "exception"  # it raised
    TIMEOUT = "timeout"  # CPU budget or wall clock exceeded
    MEMORY = "memory"  # address-space limit hit
    BAD_OUTPUT = "bad_output"  # returned something its signature does not allow
    FORBIDDEN = "forbidden"  # tried I/O, a process, a socket, a write, a non-allowed import
    INVALID = "invalid"  # source does not compile, function missing, unknown signature
    CRASH = "crash"  # the worker process died for another reason


class VerifierError(BaseModel):
    """A typed verifier failure: what kind, a message to act on, the verifier's traceback."""

    model_config = ConfigDict(extra="forbid")

    kind: VerifierErrorKind
    message: str
    traceback: str | None = None


class VerifierResult(BaseModel):
    """The outcome of one verification, successful or not."""

    model_config = ConfigDict(extra="forbid")

    function: str
    signature: str = Field(description="The adapter that called it: native, verify_task, ...")
    complete: bool | None = Field(
        default=None, description="The verifier's verdict; None when it gives evidence only."
    )
    evidence: dict[str, Any] = Field(default_factory=dict)
    error: VerifierError | None = None
    duration_s: float = 0.0
    stdout: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None
