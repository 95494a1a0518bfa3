"""awm-synth: see the package README.

The names below are the public API; they are imported on first use, so loading the
plugin (every ``awm`` start) does not pull in FastAPI, SQLAlchemy or the pipeline.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from awm_core.lazy import lazy_getattr

try:
    __version__ = version("awm-synth")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

# name -> module (imported on first use)
_EXPORTS = {
    "EnvStatus": ".store.checkpoint",
    "RunDir": ".store.checkpoint",
    "SynthConfig": ".config",
    "Thresholds": ".config",
    "ArtifactParseError": ".errors",
    "ReplayMissingError": ".errors",
    "RunDirError": ".errors",
    "SynthError": ".errors",
    "estimate_run": ".reporting.estimate",
    "SynthLLM": ".llm.client",
    "RunSummary": ".pipeline",
    "make_llm": ".pipeline",
    "run_pipeline": ".pipeline",
    "ReplayBackend": ".llm.replay",
    "build_report": ".reporting.report",
    "render_report": ".reporting.report",
    "CheckLimits": ".checks.sandbox",
    "CheckSandbox": ".checks.sandbox",
    "SandboxUnavailableError": ".checks.sandbox",
}

if TYPE_CHECKING:
    from awm_synth.checks.sandbox import CheckLimits, CheckSandbox, SandboxUnavailableError
    from awm_synth.config import SynthConfig, Thresholds
    from awm_synth.errors import ArtifactParseError, ReplayMissingError, RunDirError, SynthError
    from awm_synth.llm.client import SynthLLM
    from awm_synth.llm.replay import ReplayBackend
    from awm_synth.pipeline import RunSummary, make_llm, run_pipeline
    from awm_synth.reporting.estimate import estimate_run
    from awm_synth.reporting.report import build_report, render_report
    from awm_synth.store.checkpoint import EnvStatus, RunDir


__getattr__ = lazy_getattr("awm_synth", _EXPORTS)


__all__ = [
    "ArtifactParseError",
    "CheckLimits",
    "CheckSandbox",
    "EnvStatus",
    "ReplayBackend",
    "ReplayMissingError",
    "RunDir",
    "RunDirError",
    "RunSummary",
    "SandboxUnavailableError",
    "SynthConfig",
    "SynthError",
    "SynthLLM",
    "Thresholds",
    "__version__",
    "build_report",
    "estimate_run",
    "make_llm",
    "render_report",
    "run_pipeline",
]
