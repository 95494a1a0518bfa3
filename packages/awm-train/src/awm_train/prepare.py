"""``awm train prepare``: awm tasks as verl's parquet, with splits and a reproducible manifest.

Each row is one task; the agent loop rebuilds the episode from ``extra_info``
(environment and task ids), so the ``prompt`` column is what the model will see
first (system prompt with the two meta-tools, and the instruction), used by verl
for length filtering and logs. Splits are by *environment*: validation
environments never appear in training, which is what out-of-distribution
validation means here. The manifest names every environment and task with a
content hash, so a published subset can be rebuilt exactly or fails loudly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from awm_core.episode import DEFAULT_SYSTEM_PROMPT, META_TOOLS
from awm_core.errors import AWMError
from awm_core.models import Task
from awm_core.toolcalls import get_format

__all__ = [
    "AGENT_NAME",
    "ManifestMismatchError",
    "PreparedTask",
    "prepare_dataset",
    "select_tasks",
    "split_by_environment",
    "verl_row",
]

AGENT_NAME = "awm_agent"
MANIFEST_VERSION = 1


class ManifestMismatchError(AWMError):
    """A manifest names an environment or task whose content differs from what is installed."""


@dataclass(frozen=True)
class PreparedTask:
    """One task chosen for training, with the hashes that pin its content."""

    env_id: str
    task_id: str
    source: str
    complexity: str
    instruction: str
    bundle_sha256: str
    task_sha256: str
    proven: bool | None


def task_digest(task: Task) -> str:
    """sha256 of the task's canonical JSON (instruction, reference, verifier name...)."""
    payload = json.dumps(task.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def select_tasks(
    env_refs: Iterable[str | Path],
    *,
    proven_only: bool = True,
    complexities: Sequence[str] | None = None,
    on_env: Callable[[str], None] | None = None,
) -> list[PreparedTask]:
    """Tasks of the given environments (catalog ids or bundle folders), filtered.

    ``proven_only`` validates each environment (reference solution completes,
    wrong attempts rejected) and keeps the proven tasks; otherwise every task is
    kept and ``proven`` is None.
    """
    from awm_envs import CATALOG_DIR, load_environment, validate_environment

    chosen: list[PreparedTask] = []
    for ref in env_refs:
        env = load_environment(ref)
        if on_env is not None:
            on_env(env.id)
        proven: dict[str, bool] = {}
        if proven_only:
            proven = {t.task_id: t.proven for t in validate_environment(env.path).tasks}
        source = "catalog" if env.path.parent.resolve() == CATALOG_DIR.resolve() else "bundle"
        digest = env.digest
        for task in env.tasks:
            if complexities and task.complexity.value not in complexities:
                continue
            ok = proven.get(task.id) if proven_only else None
            if proven_only and not ok:
                continue
            chosen.append(
                PreparedTask(
                    env_id=env.id,
                    task_id=task.id,
                    source=source,
                    complexity=task.complexity.value,
                    instruction=task.instruction,
                    bundle_sha256=digest,
                    task_sha256=task_digest(task),
                    proven=ok,
                )
            )
    return chosen


def _env_rank(env_id: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}:{env_id}".encode()).hexdigest()


def split_by_environment(
    tasks: Sequence[PreparedTask],
    *,
    val_envs: Sequence[str] = (),
    val_fraction: float = 0.0,
    seed: str = "awm",
) -> dict[str, list[PreparedTask]]:
    """``{"train": [...], "val": [...]}`` with every environment wholly in one split.

    Named ``val_envs`` go to validation; otherwise the ``val_fraction`` of
    environments that rank first by a seeded hash of their id (stable when
    environments are added or removed: the others keep their split).
    """
    env_ids = sorted({t.env_id for t in tasks})
    unknown = sorted(set(val_envs) - set(env_ids))
    if unknown:
        raise AWMError(f"--val-env names environments with no selected task: {', '.join(unknown)}")
    held = set(val_envs)
    if not held and val_fraction > 0:
        count = max(1, round(len(env_ids) * val_fraction))
        held = set(sorted(env_ids, key=lambda e: _env_rank(e, seed))[:count])
    if held and held == set(env_ids):
        raise AWMError("every environment is in validation: nothing left to train on")
    return {
        "train": [t for t in tasks if t.env_id not in held],
        "val": [t for t in tasks if t.env_id in held],
    }


def verl_row(task: PreparedTask, split: str, index: int) -> dict[str, Any]:
    """One parquet row in the layout verl's ``RLHFDataset`` and agent loops read."""
    form = get_format("hermes")
    return {
        "data_source": f"awm/{task.source}",
        "agent_name": AGENT_NAME,
        "prompt": [
            {"role": "system", "content": form.system_prompt(DEFAULT_SYSTEM_PROMPT, META_TOOLS)},
            {"role": "user", "content": task.instruction},
        ],
        "ability": "tool-use",
        "reward_model": {"style": "awm", "ground_truth": f"{task.env_id}/{task.task_id}"},
        "extra_info": {
            "split": split,
            "index": index,
            "env_id": task.env_id,
            "task_id": task.task_id,
            "complexity": task.complexity,
            "bundle_sha256": task.bundle_sha256,
            "task_sha256": task.task_sha256,
        },
    }


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def prepare_dataset(
    splits: dict[str, list[PreparedTask]], out: Path, *, filters: dict[str, Any]
) -> dict[str, Any]:
    """Write ``train.parquet``, ``val.parquet`` and ``manifest.json`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for split, tasks in splits.items():
        path = out / f"{split}.parquet"
        _write_parquet([verl_row(t, split, i) for i, t in enumerate(tasks)], path)
        files[split] = path.name
    envs: dict[str, dict[str, Any]] = {}
    for split, tasks in splits.items():
        for t in tasks:
            envs.setdefault(
                t.env_id, {"split": split, "source": t.source, "bundle_sha256": t.bundle_sha256}
            )
    manifest = {
        "version": MANIFEST_VERSION,
        "filters": filters,
        "files": files,
        "counts": {
            split: {"environments": len({t.env_id for t in ts}), "tasks": len(ts)}
            for split, ts in splits.items()
        },
        "environments": dict(sorted(envs.items())),
        "tasks": {split: [asdict(t) for t in ts] for split, ts in splits.items()},
    }
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False)
    (out / "manifest.json").write_text(text + "\n", encoding="utf-8")
    manifest["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return manifest


def splits_from_manifest(
    manifest: dict[str, Any], env_refs: dict[str, str | Path] | None = None
) -> dict[str, list[PreparedTask]]:
    """The manifest's exact splits, checked against the installed environments' content."""
    from awm_envs import load_environment

    refs = env_refs or {}
    digests: dict[str, str] = {}
    tasks_by_env: dict[str, dict[str, str]] = {}
    out: dict[str, list[PreparedTask]] = {}
    for split, rows in manifest["tasks"].items():
        chosen = []
        for row in rows:
            t = PreparedTask(**row)
            if t.env_id not in digests:
                env = load_environment(refs.get(t.env_id, t.env_id))
                digests[t.env_id] = env.digest
                tasks_by_env[t.env_id] = {x.id: task_digest(x) for x in env.tasks}
            if digests[t.env_id] != t.bundle_sha256:
                raise ManifestMismatchError(
                    f"environment {t.env_id!r} differs from the manifest's "
                    f"(bundle sha256 {digests[t.env_id][:12]} != {t.bundle_sha256[:12]})"
                )
            if tasks_by_env[t.env_id].get(t.task_id) != t.task_sha256:
                raise ManifestMismatchError(
                    f"task {t.env_id}/{t.task_id} is missing or differs from the manifest's"
                )
            chosen.append(t)
        out[split] = chosen
    return out
