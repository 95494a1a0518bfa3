"""awm-envs: database-backed tool-use environments with thousands of isolated instances.

Ten lines to get going::

    from awm_envs import load_environment, EnvPool

    env = load_environment("shop")               # catalog id or bundle folder
    with env.instance() as inst:                 # in-process, trusted
        print(inst.call_tool_sync("search_products", {"query": "lamp"}))

    async with EnvPool(env, size=64, workers=2) as pool:   # sandboxed workers
        async with pool.instance() as inst:                 # reset on release
            result = await inst.call_tool("get_product", {"product_id": 3})

The names below (and :mod:`awm_envs.sandbox`, :mod:`awm_envs.verifiers`) are the public API;
the layers behind them (``bundle/``, ``runtime/``, ``pool/``, ``serve/``, ``validation/``, ``awm1k/``,
``simulate/``, ``cli/``) are described in docs/architecture.md and may change between releases.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module: imported on first use, so loading the plugin (every `awm` start) does not
# pull in FastAPI and SQLAlchemy. Not awm_core.lazy: sandboxed jobs import this package, and
# every module imported here (awm_core brings pydantic) is copied into each forked job.
_EXPORTS = {
    "Bundle": ".bundle.loader",
    "load_bundle": ".bundle.loader",
    "CATALOG_DIR": ".bundle.sources",
    "FolderSource": ".bundle.sources",
    "list_envs": ".bundle.sources",
    "resolve_env": ".bundle.sources",
    "freeze_now": ".bundle.timefreeze",
    "split_statements": ".bundle.sqlscript",
    "derive_tool_specs": ".bundle.toolspecs",
    "BundleError": ".errors",
    "BundleProblem": ".errors",
    "EnvironmentNotFoundError": ".errors",
    "Environment": ".runtime.environment",
    "load_environment": ".runtime.environment",
    "Instance": ".runtime.instance",
    "EnvPool": ".pool.envpool",
    "RemoteInstance": ".pool.remote",
    "WorkerDied": ".pool.remote",
    "WorkerPool": ".pool.remote",
    "WorkerRequestError": ".pool.remote",
    "SimulatedEnvironment": ".simulate.simulator",
    "validation_record": ".validation.record",
    "EnvValidation": ".validation.validate",
    "TaskValidation": ".validation.validate",
    "catalog_env_ids": ".validation.validate",
    "validate_environment": ".validation.validate",
}

if TYPE_CHECKING:
    from awm_envs.bundle.loader import Bundle, load_bundle
    from awm_envs.bundle.sources import CATALOG_DIR, FolderSource, list_envs, resolve_env
    from awm_envs.bundle.sqlscript import split_statements
    from awm_envs.bundle.timefreeze import freeze_now
    from awm_envs.bundle.toolspecs import derive_tool_specs
    from awm_envs.errors import BundleError, BundleProblem, EnvironmentNotFoundError
    from awm_envs.pool.envpool import EnvPool
    from awm_envs.pool.remote import RemoteInstance, WorkerDied, WorkerPool, WorkerRequestError
    from awm_envs.runtime.environment import Environment, load_environment
    from awm_envs.runtime.instance import Instance
    from awm_envs.simulate.simulator import SimulatedEnvironment
    from awm_envs.validation.record import validation_record
    from awm_envs.validation.validate import (
        EnvValidation,
        TaskValidation,
        catalog_env_ids,
        validate_environment,
    )


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
    return getattr(importlib.import_module(module, "awm_envs"), name)


__all__ = [
    "Bundle",
    "BundleError",
    "BundleProblem",
    "CATALOG_DIR",
    "EnvPool",
    "EnvValidation",
    "Environment",
    "EnvironmentNotFoundError",
    "FolderSource",
    "Instance",
    "RemoteInstance",
    "SimulatedEnvironment",
    "TaskValidation",
    "WorkerDied",
    "WorkerPool",
    "WorkerRequestError",
    "catalog_env_ids",
    "derive_tool_specs",
    "freeze_now",
    "list_envs",
    "load_bundle",
    "load_environment",
    "resolve_env",
    "split_statements",
    "validate_environment",
    "validation_record",
    "__version__",
]
