"""The adapter tests need OpenEnv and SkyRL-gym (``nox -s adapters`` installs them)."""

import importlib.util

_needed = ("openenv", "skyrl_gym")
collect_ignore = [] if all(importlib.util.find_spec(m) for m in _needed) else ["tests_adapters"]
