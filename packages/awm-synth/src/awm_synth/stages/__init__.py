"""The pipeline's stages, each a function over typed artifacts (see :mod:`awm_synth.pipeline`)."""

from __future__ import annotations

SCENARIO_STAGE = "scenario"
ENV_STAGES: tuple[str, ...] = ("tasks", "schema", "data", "spec", "code", "verifiers")
ALL_STAGES: tuple[str, ...] = (SCENARIO_STAGE, *ENV_STAGES)
