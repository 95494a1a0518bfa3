"""awm-verify's plugin: what this package contributes through the awm hooks.

Registered through the ``awm`` entry point exactly like a third party's plugin:
the three verifier signatures, the ``code`` / ``llm`` / ``code+llm`` judges, the
reward functions and the ``awm verify`` command group.
"""

from __future__ import annotations

import click
from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_verifiers(register: Register) -> None:
    from awm_verify.signatures import BUILTIN_ADAPTERS

    for adapter in BUILTIN_ADAPTERS:
        register(adapter.name, adapter)
