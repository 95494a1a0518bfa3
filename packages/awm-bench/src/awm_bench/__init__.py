"""awm-bench: see the package README.

The names below are the public API; they are imported on first use, so loading the
plugin (every ``awm`` start) does not pull in the environment runtime.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from awm_core.lazy import lazy_getattr

try:
    __version__ = version("awm-bench")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

# name -> module (imported on first use)
_EXPORTS = {
    "DemoConfig": ".demo",
    "DemoResult": ".demo",
    "run_demo": ".demo",
    "BUCKETS": ".evaluate",
    "EnvReport": ".evaluate",
    "EpisodeOutcome": ".evaluate",
    "PolicyFactory": ".evaluate",
    "evaluate_environment": ".evaluate",
    "render_report": ".report_html",
}

if TYPE_CHECKING:
    from awm_bench.demo import DemoConfig, DemoResult, run_demo
    from awm_bench.evaluate import (
        BUCKETS,
        EnvReport,
        EpisodeOutcome,
        PolicyFactory,
        evaluate_environment,
    )
    from awm_bench.report_html import render_report


__getattr__ = lazy_getattr("awm_bench", _EXPORTS)


__all__ = [
    "BUCKETS",
    "DemoConfig",
    "DemoResult",
    "EnvReport",
    "EpisodeOutcome",
    "PolicyFactory",
    "__version__",
    "evaluate_environment",
    "render_report",
    "run_demo",
]
