"""awm-bench: see the package README.

The names in ``__init__.pyi`` are the public API; they are imported on first use, so loading the
plugin (every ``awm`` start) does not pull in the environment runtime.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
