"""awm-core's own plugin: registered through the same hooks as any third party's."""

from __future__ import annotations

from awm_core.hookspecs import Register, hookimpl


@hookimpl
def register_llm_backends(register: Register) -> None:
    from awm_core.llm.scripted import ScriptedBackend

    register("scripted", ScriptedBackend.from_spec)
