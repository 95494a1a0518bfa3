"""Lazy package exports: each public name written once, in the package's ``__init__.pyi``.

``awm`` loads every installed plugin at start-up, and code inside a sandbox
imports these packages too; importing FastAPI, SQLAlchemy or torch there just to
reach one name would cost every command seconds. So a package's ``__init__.py``
imports nothing: its stub ``__init__.pyi`` lists the public names as re-exports
(``from .bundle.loader import Bundle as Bundle``), which is what type checkers
read, and :func:`attach` turns the same stub into the module's ``__getattr__``,
``__dir__`` and ``__all__`` through scientific Python's ``lazy_loader``. One line
per name, read by both the type checker and the import machinery, so the two
cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lazy_loader

__all__ = ["attach"]


def attach(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``__getattr__, __dir__, __all__`` for ``package`` from the stub beside ``init_file``.

    Also answers ``__version__`` from the installed distribution (the package
    name with ``-`` for ``_``), read on first use: ``importlib.metadata`` is
    slow to import and most processes never ask.
    """
    lazy_getattr, lazy_dir, names = lazy_loader.attach_stub(package, init_file)
    distribution = package.split(".")[0].replace("_", "-")

    def __getattr__(name: str) -> Any:
        if name == "__version__" and "." not in package:
            from importlib.metadata import PackageNotFoundError, version

            try:
                return version(distribution)
            except PackageNotFoundError:  # pragma: no cover - a source tree without install
                return "0.0.0"
        try:
            return lazy_getattr(name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    def __dir__() -> list[str]:
        return [*lazy_dir(), "__version__"] if "." not in package else lazy_dir()

    return __getattr__, __dir__, [*names, "__version__"] if "." not in package else names
