"""awm-verify: state diffs, sandboxed verifiers, judges, rewards and judge reliability.

The names below are the public API; each lives in a module named for its concept.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

# name -> module: imported on first use, so loading the plugin (every `awm` start) stays cheap.
_EXPORTS = {
    "DatabaseDiff": "diff",
    "RenderLimits": "diff",
    "TableDiff": "diff",
    "diff_databases": "diff",
    "diff_images": "diff",
    "Judge": "judge",
    "JudgeError": "judge",
    "JudgeOutputError": "judge",
    "JudgeRequest": "judge",
    "get_judge": "judge",
    "judge_many": "judge",
    "list_judges": "judge",
    "ReliabilityReport": "reliability",
    "cohens_kappa": "reliability",
    "fleiss_kappa": "reliability",
    "reliability_report": "reliability",
    "WeightedSum": "rewards",
    "compose": "rewards",
    "resolve_reward": "rewards",
    "SandboxLimits": "sandbox",
    "VerifierError": "sandbox",
    "VerifierErrorKind": "sandbox",
    "VerifierPool": "sandbox",
    "VerifierResult": "sandbox",
    "run_verifier": "sandbox",
    "Episode": "verify",
    "VerificationReport": "verify",
    "verify_episode": "verify",
    "verify_many": "verify",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'awm_verify' has no attribute {name!r}")
    return getattr(importlib.import_module(f"awm_verify.{module}"), name)


try:
    __version__ = version("awm-verify")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = sorted(_EXPORTS)
