"""The run folder: one checkpoint file per (scenario, stage), written atomically.

Layout of ``RUN_DIR``::

    run.json                     the SynthConfig the run was started with
    scenarios.json               the scenario stage's StageRecord
    envs/<scenario>/<stage>.json one StageRecord per stage and scenario
    envs/<scenario>/status.json  shipped / failed, and why
    bundles/<scenario>/          finished environment bundles (the awm-envs format)
    cache/                       the LLM response cache (unless --cache points elsewhere)

A stage whose checkpoint exists is never run again, so a killed run resumes
at the first missing checkpoint; the cache makes the interrupted stage's
already-answered requests free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from awm_core.atomic import atomic_write_json
from awm_synth.config import SynthConfig
from awm_synth.errors import RunDirError
from awm_synth.store.records import StageRecord


class EnvStatus(BaseModel):
    """Where one scenario's environment ended up."""

    model_config = ConfigDict(extra="forbid")

    scenario: str
    status: str = Field(description="shipped | failed")
    failed_stage: str | None = None
    reason: str = ""
    bundle: str | None = None
    tasks: int = 0
    tools: int = 0
    dropped_tasks: list[str] = Field(default_factory=list)


class RunDir:
    """Typed access to a run folder's checkpoints."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # paths
    @property
    def config_path(self) -> Path:
        return self.root / "run.json"

    @property
    def scenarios_path(self) -> Path:
        return self.root / "scenarios.json"

    @property
    def cache_dir(self) -> Path:
        return self.root / "cache"

    @property
    def bundles_dir(self) -> Path:
        return self.root / "bundles"

    def env_dir(self, scenario: str) -> Path:
        return self.root / "envs" / scenario

    def stage_path(self, scenario: str, stage: str) -> Path:
        return self.env_dir(scenario) / f"{stage}.json"

    def status_path(self, scenario: str) -> Path:
        return self.env_dir(scenario) / "status.json"

    # config
    def save_config(self, config: SynthConfig) -> None:
        atomic_write_json(self.config_path, config)

    def load_config(self) -> SynthConfig | None:
        data = self._read(self.config_path)
        return None if data is None else SynthConfig.model_validate(data)

    # records
    def save_stage(self, record: StageRecord) -> None:
        path = (
            self.scenarios_path
            if record.stage == "scenario"
            else self.stage_path(record.scenario, record.stage)
        )
        atomic_write_json(path, record)

    def load_stage(self, scenario: str, stage: str) -> StageRecord | None:
        path = self.scenarios_path if stage == "scenario" else self.stage_path(scenario, stage)
        data = self._read(path)
        if data is None:
            return None
        try:
            return StageRecord.model_validate(data)
        except ValidationError as exc:
            raise RunDirError(
                f"{path} is not a stage checkpoint ({exc.errors()[:2]}); delete it to redo the stage"
            ) from exc

    def save_status(self, status: EnvStatus) -> None:
        atomic_write_json(self.status_path(status.scenario), status)

    def load_status(self, scenario: str) -> EnvStatus | None:
        data = self._read(self.status_path(scenario))
        return None if data is None else EnvStatus.model_validate(data)

    def scenario_names(self) -> list[str]:
        env_root = self.root / "envs"
        return sorted(p.name for p in env_root.iterdir() if p.is_dir()) if env_root.is_dir() else []

    def stage_records(self) -> list[StageRecord]:
        """Every per-scenario stage checkpoint (the scenario stage excluded)."""
        out = []
        for name in self.scenario_names():
            for path in sorted(self.env_dir(name).glob("*.json")):
                if path.name == "status.json":
                    continue
                record = self.load_stage(name, path.stem)
                if record is not None:
                    out.append(record)
        return out

    @staticmethod
    def _read(path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise RunDirError(f"cannot read {path}: {exc}; delete it to redo that step") from exc
