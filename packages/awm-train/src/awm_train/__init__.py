"""awm-train: see the package README."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("awm-train")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"
