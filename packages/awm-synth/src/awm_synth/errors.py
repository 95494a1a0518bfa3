"""Typed errors of awm-synth; each message says what to do next."""

from __future__ import annotations

from awm_core.errors import AWMError
from awm_core.llm.base import LLMOutputError


class SynthError(AWMError):
    """Base class of every error the synthesis pipeline raises on purpose."""


class ArtifactParseError(SynthError, LLMOutputError):
    """The model answered, but the answer cannot be read as the stage's artifact.

    The self-correction loop treats this (and any :class:`LLMOutputError`, such
    as a missing fenced block) like any other failed check: the message is fed
    back to the model, so it names what was expected.
    """


class ReplayMissingError(SynthError):
    """The replay backend has no recorded response for a request."""


class RunDirError(SynthError):
    """The run folder is missing, unreadable, or was made by an incompatible configuration."""
