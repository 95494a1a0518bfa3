"""Typed errors shared across awm packages.

Every error says what went wrong and what the user can do about it, so that a
CLI can print ``str(err)`` and stop without a traceback.
"""

from __future__ import annotations


class AWMError(Exception):
    """Base class of every error awm raises on purpose."""


class PluginError(AWMError):
    """A plugin could not be loaded or registered something invalid."""


class UnknownNameError(AWMError, KeyError):
    """A name (backend, judge, reward, ...) was asked for that no plugin registered."""

    def __init__(self, kind: str, name: str, known: list[str], hint: str = "") -> None:
        import difflib

        self.kind = kind
        self.name = name
        self.known = sorted(known)
        close = difflib.get_close_matches(name, self.known, n=3, cutoff=0.6)
        self.suggestions = close
        choices = ", ".join(self.known) or "none registered"
        guess = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        extra = f"; {hint}" if hint else ""
        super().__init__(f"unknown {kind} {name!r}{guess}{extra}; known {kind}s: {choices}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return str(self.args[0])


class PluginRegistrationError(PluginError):
    """A plugin registered something that does not implement its kind's contract."""

    def __init__(self, plugin: str, kind: str, name: str, problem: str) -> None:
        self.plugin = plugin
        self.kind = kind
        self.name = name
        super().__init__(
            f"the awm plugin {plugin!r} registered an invalid {kind} {name!r}: {problem}"
        )


class DuplicateNameError(PluginError):
    """Two plugins registered the same name for the same kind of thing."""


class SchemaNotFoundError(UnknownNameError):
    """``awm schema NAME`` was asked for a schema that does not exist."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__("schema", name, known)


class BenchmarkUnavailableError(AWMError):
    """A benchmark's package is not installed; the message says what to install."""


class UnknownSubsetError(AWMError, ValueError):
    """``--only`` names a category, domain or environment the benchmark does not have."""


class UserSimulatorError(AWMError):
    """A conversational task's user cannot be simulated (no script, no model, an empty turn)."""
