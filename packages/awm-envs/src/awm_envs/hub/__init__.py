"""Environment bundles on the Hugging Face hub: ``awm envs pull`` / ``awm envs push``.

:func:`pull_bundle` and :func:`push_bundle` need the ``[hub]`` extra
(``huggingface_hub``); the cache location and the content record do not. The
names are imported on first use: the plugin reads :mod:`awm_envs.hub.cache` at
every ``awm`` start, which must not cost a pydantic or httpx import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from awm_core.lazy import lazy_getattr

_EXPORTS = {
    "hub_cache_dir": ".cache",
    "PulledBundle": ".client",
    "PushedBundle": ".client",
    "pull_bundle": ".client",
    "push_bundle": ".client",
    "BundleIntegrityError": ".errors",
    "HubConnectionError": ".errors",
    "HubError": ".errors",
    "HubPermissionError": ".errors",
    "HubRepoNotFoundError": ".errors",
    "HubUnavailableError": ".errors",
    "NotABundleRepoError": ".errors",
    "PulledBundleConflictError": ".errors",
    "PushRefusedError": ".errors",
}
__getattr__ = lazy_getattr(__name__, _EXPORTS)

if TYPE_CHECKING:
    from awm_envs.hub.cache import hub_cache_dir
    from awm_envs.hub.client import PulledBundle, PushedBundle, pull_bundle, push_bundle
    from awm_envs.hub.errors import (
        BundleIntegrityError,
        HubConnectionError,
        HubError,
        HubPermissionError,
        HubRepoNotFoundError,
        HubUnavailableError,
        NotABundleRepoError,
        PulledBundleConflictError,
        PushRefusedError,
    )

__all__ = [
    "BundleIntegrityError",
    "HubConnectionError",
    "HubError",
    "HubPermissionError",
    "HubRepoNotFoundError",
    "HubUnavailableError",
    "NotABundleRepoError",
    "PulledBundle",
    "PulledBundleConflictError",
    "PushRefusedError",
    "PushedBundle",
    "hub_cache_dir",
    "pull_bundle",
    "push_bundle",
]
