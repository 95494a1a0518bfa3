"""awm-verify: state diffs, judges, rewards, judge reliability and verified rollouts.

The names below are the public API; each lives in a module named for its concept
(the diff engine, the verifier result models and the judge contract live in
awm-core, so that plugins can type against them without this package; a bundle's
verifiers are run by :mod:`awm_envs.verifiers`).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from awm_core.lazy import lazy_getattr

# name -> module: imported on first use, so loading the plugin (every `awm` start) stays cheap.
_EXPORTS = {
    "DatabaseDiff": "awm_core.dbdiff",
    "RenderLimits": "awm_core.dbdiff",
    "TableDiff": "awm_core.dbdiff",
    "diff_databases": "awm_core.dbdiff",
    "diff_images": "awm_core.dbdiff",
    "Judge": "awm_core.contracts",
    "JudgeRequest": "awm_core.contracts",
    "JudgeError": "awm_verify.judge",
    "JudgeOutputError": "awm_verify.judge",
    "judge_many": "awm_verify.judge",
    "ReliabilityReport": "awm_verify.reliability",
    "cohens_kappa": "awm_verify.reliability",
    "fleiss_kappa": "awm_verify.reliability",
    "reliability_report": "awm_verify.reliability",
    "WeightedSum": "awm_verify.rewards",
    "compose": "awm_verify.rewards",
    "resolve_reward": "awm_verify.rewards",
    "VerifierError": "awm_core.models.verification",
    "VerifierErrorKind": "awm_core.models.verification",
    "VerifierResult": "awm_core.models.verification",
    "Rollout": "awm_verify.rollout",
    "rollout_episode": "awm_verify.rollout",
    "verify_rollout": "awm_verify.rollout",
    "GymEpisode": "awm_verify.gym",
    "Observation": "awm_verify.gym",
    "StepResult": "awm_verify.gym",
    "TaskEnv": "awm_verify.gym",
    "Episode": "awm_verify.verify",
    "VerificationReport": "awm_verify.verify",
    "verify_episode": "awm_verify.verify",
    "verify_many": "awm_verify.verify",
}

if TYPE_CHECKING:
    from awm_core.contracts import Judge, JudgeRequest
    from awm_core.dbdiff import DatabaseDiff, RenderLimits, TableDiff, diff_databases, diff_images
    from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult
    from awm_verify.gym import GymEpisode, Observation, StepResult, TaskEnv
    from awm_verify.judge import JudgeError, JudgeOutputError, judge_many
    from awm_verify.reliability import (
        ReliabilityReport,
        cohens_kappa,
        fleiss_kappa,
        reliability_report,
    )
    from awm_verify.rewards import WeightedSum, compose, resolve_reward
    from awm_verify.rollout import Rollout, rollout_episode, verify_rollout
    from awm_verify.verify import Episode, VerificationReport, verify_episode, verify_many


__getattr__ = lazy_getattr("awm_verify", _EXPORTS)


try:
    __version__ = version("awm-verify")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

__all__ = [
    "DatabaseDiff",
    "Episode",
    "GymEpisode",
    "Judge",
    "JudgeError",
    "JudgeOutputError",
    "JudgeRequest",
    "Observation",
    "ReliabilityReport",
    "Rollout",
    "RenderLimits",
    "StepResult",
    "TableDiff",
    "TaskEnv",
    "VerificationReport",
    "VerifierError",
    "VerifierErrorKind",
    "VerifierResult",
    "WeightedSum",
    "cohens_kappa",
    "compose",
    "diff_databases",
    "diff_images",
    "fleiss_kappa",
    "judge_many",
    "reliability_report",
    "resolve_reward",
    "rollout_episode",
    "verify_episode",
    "verify_many",
    "verify_rollout",
]
