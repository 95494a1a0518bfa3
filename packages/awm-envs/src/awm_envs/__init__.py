"""awm-envs: database-backed tool-use environments with thousands of isolated instances.

Ten lines to get going::

    from awm_envs import load_environment, EnvPool

    env = load_environment("shop")               # catalog id or bundle folder
    with env.instance() as inst:                 # in-process, trusted
        print(inst.call_tool_sync("search_products", {"query": "lamp"}))

    async with EnvPool(env, size=64, workers=2) as pool:   # sandboxed workers
        async with pool.instance() as inst:                 # reset on release
            result = await inst.call_tool("get_product", {"product_id": 3})
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module: imported on first use, so loading the plugin (every `awm` start) does not
# pull in FastAPI and SQLAlchemy (the same scheme as awm_verify).
_EXPORTS = {
    "Bundle": "bundle",
    "load_bundle": "bundle",
    "Environment": "environment",
    "load_environment": "environment",
    "BundleError": "errors",
    "BundleProblem": "errors",
    "EnvironmentNotFoundError": "errors",
    "Instance": "instance",
    "EnvPool": "pool",
    "list_envs": "sources",
    "resolve_env": "sources",
    "RemoteInstance": "workers",
    "WorkerPool": "workers",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # importlib.metadata is slow to import; sandboxes never ask
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("awm-envs")
        except PackageNotFoundError:  # pragma: no cover
            return "0.0.0"
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'awm_envs' has no attribute {name!r}")
    return getattr(importlib.import_module(f"awm_envs.{module}"), name)


__all__ = [*sorted(_EXPORTS), "__version__"]
