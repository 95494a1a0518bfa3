"""awm-core: the types, plugin hooks and agent runtime shared by every awm package.

Every lookup by name (``get_backend``, ``get_judge``, ``get_reward_function``, ...)
is here, from :mod:`awm_core.registry`. The public names are listed once, in
``__init__.pyi``, and imported on first use (``from awm_core import Task`` works
as always), so that ``import awm_core`` (every ``awm`` start, every plugin, every
sandboxed job) does not pay for pluggy, pydantic and jsonschema.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
