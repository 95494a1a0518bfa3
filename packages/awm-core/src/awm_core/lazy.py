"""Lazy package exports: the public names of a package, imported on first use.

``awm`` loads every installed plugin at start-up, and code inside a sandbox
imports these packages too; importing FastAPI, SQLAlchemy or torch there just to
reach one name would cost every command seconds. Each package lists its public
names once (``{name: module}``), gets a module ``__getattr__`` from here, and
repeats the imports under ``if TYPE_CHECKING:`` so the names keep their types.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports[name]`` is where ``name`` lives.

    A module path starting with ``.`` is relative to ``package``; any other is absolute.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        target = f"{package}{module}" if module.startswith(".") else module
        return getattr(importlib.import_module(target), name)

    return __getattr__
