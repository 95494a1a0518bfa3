"""Look things up by name across every plugin's ``register_*`` hook.

Registries are rebuilt on each lookup: it is cheap, and it means a plugin
registered for one test (see :mod:`awm_core.testing`) is seen at once.
"""

from __future__ import annotations

from typing import Any

from awm_core.errors import DuplicateNameError, UnknownNameError
from awm_core.plugins import load_plugins, pm

KINDS: dict[str, str] = {
    "llm backend": "register_llm_backends",
    "environment source": "register_env_sources",
    "verifier": "register_verifiers",
    "judge": "register_judges",
    "reward function": "register_reward_functions",
    "benchmark converter": "register_benchmark_converters",
}


def collect(kind: str) -> dict[str, Any]:
    """Return ``{name: thing}`` for one kind of registrable thing."""
    load_plugins()
    hook = getattr(pm.hook, KINDS[kind])
    found: dict[str, Any] = {}

    def register(name: str, thing: Any) -> None:
        if name in found:
            raise DuplicateNameError(f"two plugins registered the {kind} {name!r}")
        found[name] = thing

    hook(register=register)
    return found


def lookup(kind: str, name: str) -> Any:
    """Return the thing registered under ``name`` or raise :class:`UnknownNameError`."""
    things = collect(kind)
    try:
        return things[name]
    except KeyError:
        raise UnknownNameError(kind, name, list(things)) from None
