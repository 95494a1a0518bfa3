"""awm-train: see the package README (a placeholder: nothing public beyond the version yet)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("awm-train")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = ["__version__"]
