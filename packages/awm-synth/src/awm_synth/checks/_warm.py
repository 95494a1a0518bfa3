"""Warm the sandbox fork server: load one shipped catalog bundle before any child is forked.

Imported only through the fork server's preload list (see
:mod:`awm_synth.checks.sandbox`). The first app a fresh process loads pays for lazy
imports and one-time set-up in pydantic, SQLAlchemy's SQLite dialect and
FastAPI's OpenAPI generation (~0.2 s); doing it once in the server means every
forked check worker starts past it. The bundle is the runtime's own trusted
catalog, never generated code.
"""

from __future__ import annotations

import contextlib


def warm_up() -> None:
    """Load a catalog environment and call one argument-free tool; never fail."""
    with contextlib.suppress(Exception):
        from awm_envs import CATALOG_DIR, Environment, catalog_env_ids, load_bundle

        ids = catalog_env_ids()
        if not ids:
            return

        env = Environment(load_bundle(CATALOG_DIR / ids[0]))
        with env.instance() as inst:
            for tool in env.tools:
                if not tool.input_schema.get("required"):
                    inst.call_tool_sync(tool.name, {})
                    break


warm_up()
