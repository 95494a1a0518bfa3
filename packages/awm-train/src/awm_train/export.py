"""A verl checkpoint as a Hugging Face model folder: what ``awm train export`` does.

verl saves each rank's FSDP shard of the actor (``model_world_size_W_rank_R.pt``)
under ``RUN/global_step_N/actor/``, with the model's config and tokenizer in
``actor/huggingface/``; ``RUN`` is the run's ``trainer.default_local_dir`` and
``RUN/latest_checkpointed_iteration.txt`` names the last complete save. Neither
transformers nor vLLM reads the shards, so evaluating a trained policy needs
them merged into one folder first. verl ships that merger
(``verl.model_merger``); this module finds the checkpoint, says clearly what is
missing when it cannot, and runs verl's own FSDP merger into a staging folder
that is renamed into place only once complete, so a killed export never leaves a
folder that looks like a model.

Finding the checkpoint needs no verl (the error paths are plain folder checks);
the merge itself imports verl.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core.errors import AWMError

__all__ = [
    "ActorCheckpoint",
    "ActorShardsMissingError",
    "CheckpointExportError",
    "ExportTargetExistsError",
    "ExportedModel",
    "NoSuchRunError",
    "NoSuchStepError",
    "checkpoint_steps",
    "export_checkpoint",
    "find_actor_checkpoint",
]

TRACKER_FILE = "latest_checkpointed_iteration.txt"
PROVENANCE_FILE = "awm-export.json"
_STEP_DIR = re.compile(r"global_step_(\d+)")
_SHARD = re.compile(r"model_world_size_(\d+)_rank_(\d+)\.pt")


class CheckpointExportError(AWMError):
    """A verl checkpoint could not be exported to a Hugging Face folder."""


class NoSuchRunError(CheckpointExportError):
    """RUN is not a folder (it should be the run's ``trainer.default_local_dir``)."""

    def __init__(self, run: Path) -> None:
        self.run = run
        super().__init__(
            f"no training run at {run}: pass the folder verl saved checkpoints to "
            "(the run's trainer.default_local_dir, holding global_step_N folders)"
        )


class NoSuchStepError(CheckpointExportError):
    """The asked-for step (or any step at all) has no checkpoint folder in RUN."""

    def __init__(self, run: Path, step: int | None, available: list[int]) -> None:
        self.run = run
        self.step = step
        self.available = available
        if not available:
            message = (
                f"{run} holds no checkpoint (no global_step_N folder): verl saves one every "
                "trainer.save_freq steps, and -1 (verl's default) never saves; rerun with "
                "trainer.save_freq=N"
            )
        else:
            message = (
                f"{run} has no checkpoint of step {step}; steps saved: "
                f"{', '.join(str(s) for s in available)}"
            )
        super().__init__(message)


class ActorShardsMissingError(CheckpointExportError):
    """A step folder exists but its actor checkpoint is absent, partial or not FSDP."""

    def __init__(self, actor: Path, problem: str) -> None:
        self.actor = actor
        self.problem = problem
        super().__init__(f"cannot export {actor}: {problem}")


class ExportTargetExistsError(CheckpointExportError):
    """``--out`` already holds files (an export never mixes its files with others)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        super().__init__(
            f"{out} already exists and is not empty: choose another --out, or pass --force "
            "to replace it"
        )


@dataclass(frozen=True)
class ActorCheckpoint:
    """One step's actor checkpoint, checked complete: every rank's shard and the HF config."""

    run: Path
    step: int
    path: Path  # RUN/global_step_N/actor
    world_size: int

    @property
    def hf_config_dir(self) -> Path:
        """Where verl put the model's config and tokenizer (merged next to the weights)."""
        return self.path / "huggingface"


@dataclass(frozen=True)
class ExportedModel:
    """What an export wrote: the model folder and where it came from."""

    run: Path
    step: int
    out: Path
    world_size: int
    seconds: float
    # with LoRA, verl's merger writes the adapter here and the folder's own weights are the
    # base model's: evaluate base + adapter, not the folder alone
    lora_adapter: Path | None
    files: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``awm train export --json`` prints."""
        return {
            "run": str(self.run),
            "step": self.step,
            "out": str(self.out),
            "world_size": self.world_size,
            "seconds": round(self.seconds, 3),
            "lora_adapter": str(self.lora_adapter) if self.lora_adapter else None,
            "files": self.files,
            "model_spec": f"local:{self.out}",
        }


def checkpoint_steps(run: Path) -> list[int]:
    """The steps RUN holds a ``global_step_N`` folder for, ascending."""
    if not run.is_dir():
        raise NoSuchRunError(run)
    steps = []
    for child in run.iterdir():
        match = _STEP_DIR.fullmatch(child.name)
        if match and child.is_dir():
            steps.append(int(match.group(1)))
    return sorted(steps)


def _latest_step(run: Path, steps: list[int]) -> int:
    """verl's tracker (written after a complete save), else the highest step folder."""
    tracker = run / TRACKER_FILE
    if tracker.is_file():
        text = tracker.read_text(encoding="utf-8").strip()
        if text.isdigit():
            return int(text)
    if not steps:
        raise NoSuchStepError(run, None, steps)
    return steps[-1]


def find_actor_checkpoint(run: Path, step: int | None = None) -> ActorCheckpoint:
    """Step ``step`` (default: the latest) of RUN's actor, checked to be a complete FSDP save."""
    steps = checkpoint_steps(run)
    chosen = _latest_step(run, steps) if step is None else step
    if chosen not in steps:
        raise NoSuchStepError(run, chosen, steps)
    actor = run / f"global_step_{chosen}" / "actor"
    if not actor.is_dir():
        raise ActorShardsMissingError(
            actor, "the step folder has no actor/ (was the save interrupted?)"
        )
    if (actor / "model" / "dist_ckpt").exists() or (actor / "dist_ckpt").exists():
        raise ActorShardsMissingError(
            actor,
            "this is a Megatron checkpoint; awm exports FSDP ones: run `python -m "
            "verl.model_merger merge --backend megatron --local_dir ACTOR --target_dir OUT`",
        )
    shards = {
        (int(m.group(1)), int(m.group(2)))
        for p in actor.iterdir()
        if (m := _SHARD.fullmatch(p.name))
    }
    if not shards:
        raise ActorShardsMissingError(
            actor,
            "no FSDP model shards (model_world_size_W_rank_R.pt): the run saved without "
            "'model' in actor.checkpoint.save_contents, or the save did not finish",
        )
    world_size = _world_size(actor, shards)
    missing = sorted(r for r in range(world_size) if (world_size, r) not in shards)
    if missing:
        raise ActorShardsMissingError(
            actor, f"shards of rank(s) {missing} of {world_size} are missing"
        )
    if not (actor / "huggingface" / "config.json").is_file():
        raise ActorShardsMissingError(
            actor, "no huggingface/config.json next to the shards (verl writes it on rank 0)"
        )
    return ActorCheckpoint(run=run, step=chosen, path=actor, world_size=world_size)


def _world_size(actor: Path, shards: set[tuple[int, int]]) -> int:
    config = actor / "fsdp_config.json"
    if not config.is_file():
        raise ActorShardsMissingError(actor, "no fsdp_config.json (verl writes it on rank 0)")
    try:
        size = json.loads(config.read_text(encoding="utf-8"))["world_size"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ActorShardsMissingError(actor, f"unreadable fsdp_config.json ({exc})") from exc
    if not isinstance(size, int) or size < 1:
        raise ActorShardsMissingError(actor, f"fsdp_config.json gives world_size {size!r}")
    return size


def export_checkpoint(
    run: Path, out: Path, *, step: int | None = None, overwrite: bool = False
) -> ExportedModel:
    """Merge step ``step`` (default: latest) of RUN's actor into the Hugging Face folder ``out``.

    The folder gets the weights (safetensors, in the dtype verl's merger writes:
    bfloat16), config, generation config and tokenizer with its chat template,
    plus ``awm-export.json`` saying which run and step it came from. verl's
    progress lines go to stderr, so a caller's stdout stays clean for ``--json``.
    """
    checkpoint = find_actor_checkpoint(run, step)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise ExportTargetExistsError(out)
    try:
        from verl.model_merger.base_model_merger import (  # type: ignore[import-not-found, unused-ignore]
            ModelMergerConfig,
        )
        from verl.model_merger.fsdp_model_merger import (  # type: ignore[import-not-found, unused-ignore]
            FSDPModelMerger,
        )
    except ImportError as exc:
        raise CheckpointExportError(
            f"exporting needs verl's model merger: pip install 'awm-train[verl]' ({exc})"
        ) from exc

    started = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.export-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        config = ModelMergerConfig(
            operation="merge",
            backend="fsdp",
            local_dir=str(checkpoint.path),
            target_dir=str(staging),
            hf_model_config_path=str(checkpoint.hf_config_dir),
        )
        with contextlib.redirect_stdout(sys.stderr):
            merger = FSDPModelMerger(config)
            merger.merge_and_save()
            merger.cleanup()
        if not (staging / "tokenizer_config.json").is_file():
            raise ActorShardsMissingError(
                checkpoint.path, "huggingface/ has no tokenizer, so the model could not be used"
            )
        lora = staging / "lora_adapter"
        _write_provenance(staging, checkpoint, has_lora=lora.is_dir())
        if out.exists():  # overwrite: only now that the new folder is complete
            if out.is_dir():
                shutil.rmtree(out)
            else:
                out.unlink()
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ExportedModel(
        run=run,
        step=checkpoint.step,
        out=out,
        world_size=checkpoint.world_size,
        seconds=time.perf_counter() - started,
        lora_adapter=out / "lora_adapter" if (out / "lora_adapter").is_dir() else None,
        files=sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()),
    )


def _write_provenance(folder: Path, checkpoint: ActorCheckpoint, *, has_lora: bool) -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        verl_version: str | None = version("verl")
    except PackageNotFoundError:  # pragma: no cover - the merger imported, so verl is there
        verl_version = None
    record = {
        "source": "verl FSDP checkpoint",
        "run": str(checkpoint.run.resolve()),
        "step": checkpoint.step,
        "world_size": checkpoint.world_size,
        "verl": verl_version,
        "lora_adapter": "lora_adapter" if has_lora else None,
    }
    (folder / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
