"""Environment bundles on the Hugging Face hub: ``awm envs pull`` / ``awm envs push``.

:func:`pull_bundle` and :func:`push_bundle` need the ``[hub]`` extra
(``huggingface_hub``); the cache location and the content record do not. The
names are imported on first use: the plugin reads :mod:`awm_envs.hub.cache` at
every ``awm`` start, which must not cost a pydantic or httpx import.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
