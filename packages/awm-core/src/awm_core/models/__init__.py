"""Pydantic models for everything that crosses a package boundary or a file.

Each model is versioned through :mod:`awm_core.schemas`; bump ``SCHEMA_VERSION``
there when a change is not backwards compatible.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
