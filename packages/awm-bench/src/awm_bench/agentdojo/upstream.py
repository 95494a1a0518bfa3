"""The one place that imports ``agentdojo`` (0.1.35, the ``awm-bench[agentdojo]`` extra).

AgentDojo's suites (environment YAML, injection vectors, tasks) ship in its wheel, so
nothing here reaches the network; its LLM clients are only ever pointed at awm's own
local endpoint.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from awm_core.errors import AWMError, BenchmarkUnavailableError

AGENTDOJO_VERSION = "0.1.35"
BENCHMARK_VERSION = "v1.2.2"
"""The suites' version: AgentDojo 0.1.35's own default (``--benchmark-version``)."""
INSTALL_HINT = (
    f"pip install 'awm-bench[agentdojo]' (agentdojo=={AGENTDOJO_VERSION}), or run `nox -s bench`"
)


class AgentDojoUnavailableError(BenchmarkUnavailableError):
    """agentdojo is not installed (or not the pinned release)."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            f"AgentDojo needs agentdojo=={AGENTDOJO_VERSION}: {INSTALL_HINT}"
            + (f" ({detail})" if detail else "")
        )


class UnknownAttackError(AWMError):
    """``--attack`` names no attack in AgentDojo's registry."""


def available() -> str | None:
    """None when agentdojo (the pinned release) can be used, else what to install."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("agentdojo")
    except PackageNotFoundError:
        return f"agentdojo is not installed: {INSTALL_HINT}"
    if found != AGENTDOJO_VERSION:
        return f"agentdojo {found} is installed; awm needs {AGENTDOJO_VERSION}: {INSTALL_HINT}"
    return None


def module(name: str) -> ModuleType:
    """Import a module of agentdojo, or say what to install."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise AgentDojoUnavailableError(str(exc)) from exc


def attr(name: str, attribute: str) -> Any:
    """``module(name).attribute``."""
    return getattr(module(name), attribute)


def get_suite(name: str) -> Any:
    """AgentDojo's ``TaskSuite`` ``name`` at :data:`BENCHMARK_VERSION`."""
    return attr("agentdojo.task_suite.load_suites", "get_suite")(BENCHMARK_VERSION, name)


def attack_names() -> list[str]:
    """Every attack in AgentDojo's registry (``agentdojo.attacks.ATTACKS``)."""
    module("agentdojo.attacks")  # importing the package registers the built-in attacks
    return sorted(attr("agentdojo.attacks.attack_registry", "ATTACKS"))


def default_system_message() -> str:
    """AgentDojo's default system message (``data/system_messages.yaml``: ``default``)."""
    load = attr("agentdojo.agent_pipeline.agent_pipeline", "load_system_message")
    return str(load(None))


def attack_model_name(model: str) -> str:
    """The name AgentDojo's ``important_instructions`` attack addresses the model by.

    AgentDojo reads it from the pipeline's name (``MODEL_NAMES``: ``gpt-4o-2024-05-13``
    is ``GPT-4``); a model it does not know is what its own ``local`` provider is,
    ``Local model``, so an oracle and every awm backend get a name the attack accepts.
    """
    names: dict[str, str] = attr("agentdojo.models", "MODEL_NAMES")
    for full in names:
        if full != "local" and full in model:
            return full
    return "local"
