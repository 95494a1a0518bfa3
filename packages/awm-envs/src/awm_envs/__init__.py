"""awm-envs: database-backed tool-use environments with thousands of isolated instances.

Ten lines to get going::

    from awm_envs import load_environment, EnvPool

    env = load_environment("shop")               # catalog id or bundle folder
    with env.instance() as inst:                 # in-process, trusted
        print(inst.call_tool_sync("search_products", {"query": "lamp"}))

    async with EnvPool(env, size=64, workers=2) as pool:   # sandboxed workers
        async with pool.instance() as inst:                 # reset on release
            result = await inst.call_tool("get_product", {"product_id": 3})

The names in ``__init__.pyi`` (and :mod:`awm_envs.sandbox`, :mod:`awm_envs.verifiers`) are the public API;
the layers behind them (``bundle/``, ``runtime/``, ``pool/``, ``serve/``, ``validation/``, ``awm1k/``,
``simulate/``, ``cli/``) are described in docs/architecture.md and may change between releases.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
