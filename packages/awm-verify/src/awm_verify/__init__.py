"""awm-verify: see the package README."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("awm-verify")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"
