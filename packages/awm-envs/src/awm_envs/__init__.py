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

from importlib.metadata import PackageNotFoundError, version

from awm_envs.bundle import Bundle, load_bundle
from awm_envs.environment import Environment, load_environment
from awm_envs.errors import BundleError, BundleProblem, EnvironmentNotFoundError
from awm_envs.instance import Instance
from awm_envs.pool import EnvPool
from awm_envs.sources import list_envs, resolve_env
from awm_envs.workers import RemoteInstance, WorkerPool

try:
    __version__ = version("awm-envs")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = [
    "Bundle",
    "BundleError",
    "BundleProblem",
    "EnvPool",
    "Environment",
    "EnvironmentNotFoundError",
    "Instance",
    "RemoteInstance",
    "WorkerPool",
    "__version__",
    "list_envs",
    "load_bundle",
    "load_environment",
    "resolve_env",
]
