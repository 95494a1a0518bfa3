"""``awm train prepare``: awm tasks as verl's parquet, with splits and a reproducible manifest.

Each row is one task; the agent loop rebuilds the episode from ``extra_info``
(environment and task ids), so the ``prompt`` column is what the model will see
first (system prompt with the two meta-tools, and the instruction), used by verl
for length filtering and logs. ``extra_info`` also says where the bundle comes
from and its content digest (:class:`awm_train.bundles.BundleRef`), so an agent
loop on another node finds the same bundle or refuses to roll out.

Splits are by *environment* when there are several: validation environments
never appear in training, which is what out-of-distribution validation means
here. With a single environment that is impossible, so a seeded share of its
*tasks* is held out instead (in-distribution validation; the manifest records
which: ``filters.split``). verl needs both splits non-empty (its V1 dataloaders
divide by their sizes), so an empty split is an error, never a file. The
manifest names every environment and task with a content hash, so a published
subset can be rebuilt exactly or fails loudly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from awm_core.episode import DEFAULT_SYSTEM_PROMPT, META_TOOLS
from awm_core.errors import AWMError
from awm_core.models import Task
from awm_core.toolcalls import get_format
from awm_train.bundles import BundleRef, bundle_ref
from awm_train.safety import PerturbationMix, TaskFilter

__all__ = [
    "AGENT_NAME",
    "DEFAULT_VAL_FRACTION",
    "EmptySplitError",
    "ManifestMismatchError",
    "PreparedTask",
    "paper_batch_size",
    "perturb_tasks",
    "prepare_dataset",
    "select_tasks",
    "split_by_environment",
    "split_by_task",
    "split_tasks",
    "verl_row",
]

AGENT_NAME = "awm_agent"
MANIFEST_VERSION = 1
DEFAULT_VAL_FRACTION = 0.1
"""Share held out for validation by default: environments, or tasks when there is one environment."""
PAPER_RECIPE = "paper"
_PAPER_BATCH_FALLBACK = 128  # the paper's 128 tasks per step, if the recipe cannot be read


class ManifestMismatchError(AWMError):
    """A manifest names an environment or task whose content differs from what is installed."""


class EmptySplitError(AWMError):
    """A split would hold no task: verl cannot load an empty parquet file."""


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
    bundle_path: str = ""  # the folder it was read from ("" for the catalog: found by id)
    bundle_pull: str = ""  # for a bundle pulled from the hub: the `awm envs pull` arguments
    perturbation: str = (
        ""  # a registered perturbation every trajectory of this row meets ("": none)
    )
    perturbation_seed: int = 0  # its episode seed: the same perturbed world on every node

    @property
    def bundle(self) -> BundleRef:
        """Where an agent loop finds this task's bundle, and the content it must have."""
        return BundleRef(
            self.env_id, self.bundle_sha256, self.source, self.bundle_path, self.bundle_pull
        )


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
    conversational: bool = False,
    task_filter: TaskFilter | None = None,
) -> list[PreparedTask]:
    """Tasks of the given environments (catalog ids or bundle folders), filtered.

    ``conversational`` keeps only tasks with a user section (the agent talks to a
    simulated user; see docs/training.md). ``task_filter`` keeps tasks by tag (a
    recipe's ``tasks:``, e.g. only ``access_control`` ones).

    ``proven_only`` validates each environment (reference solution completes,
    wrong attempts rejected) and keeps the proven tasks; otherwise every task is
    kept and ``proven`` is None.
    """
    from awm_envs import load_environment, validate_environment

    chosen: list[PreparedTask] = []
    for ref in env_refs:
        env = load_environment(ref)
        if on_env is not None:
            on_env(env.id)
        proven: dict[str, bool] = {}
        if proven_only:
            proven = {t.task_id: t.proven for t in validate_environment(env.path).tasks}
        where = bundle_ref(env)
        for task in env.tasks:
            if complexities and task.complexity.value not in complexities:
                continue
            if conversational and task.user is None:
                continue
            if task_filter is not None and not task_filter.keeps(task):
                continue
            ok = proven.get(task.id) if proven_only else None
            if proven_only and not ok:
                continue
            chosen.append(
                PreparedTask(
                    env_id=env.id,
                    task_id=task.id,
                    source=where.source,
                    complexity=task.complexity.value,
                    instruction=task.user.opening if task.user else task.instruction,
                    bundle_sha256=where.digest,
                    task_sha256=task_digest(task),
                    proven=ok,
                    bundle_path=where.path,
                    bundle_pull=where.pull,
                )
            )
    return chosen


def perturb_tasks(tasks: Sequence[PreparedTask], mix: PerturbationMix) -> list[PreparedTask]:
    """``tasks`` with the perturbation ``mix`` draws for each written into it (or none).

    The draw depends on the mix's seed and the task's ids only (:meth:`PerturbationMix.choose`),
    so the rows, and so verl's episodes, are reproducible from the data alone.
    """
    out = []
    for task in tasks:
        chosen = mix.choose(task.env_id, task.task_id)
        name, seed = chosen if chosen is not None else ("", 0)
        out.append(replace(task, perturbation=name, perturbation_seed=seed))
    return out


def _rank(key: str, seed: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def _held_count(total: int, fraction: float) -> int:
    """How many of ``total`` to hold out: the share rounded, at least one, never all."""
    return min(max(1, round(total * fraction)), total - 1)


def split_by_environment(
    tasks: Sequence[PreparedTask],
    *,
    val_envs: Sequence[str] = (),
    val_fraction: float = DEFAULT_VAL_FRACTION,
    seed: str = "awm",
) -> dict[str, list[PreparedTask]]:
    """``{"train": [...], "val": [...]}`` with every environment wholly in one split.

    Named ``val_envs`` go to validation; otherwise the ``val_fraction`` of
    environments (at least one, never all) that rank first by a seeded hash of
    their id (stable when environments are added or removed: the others keep
    their split). Raises :class:`EmptySplitError` when a split would be empty.
    """
    env_ids = sorted({t.env_id for t in tasks})
    unknown = sorted(set(val_envs) - set(env_ids))
    if unknown:
        raise AWMError(f"--val-env names environments with no selected task: {', '.join(unknown)}")
    held = set(val_envs)
    if not held and val_fraction > 0 and len(env_ids) > 1:
        count = _held_count(len(env_ids), val_fraction)
        held = set(sorted(env_ids, key=lambda e: _rank(e, seed))[:count])
    if held and held == set(env_ids):
        raise EmptySplitError("every environment is in validation: nothing left to train on")
    if not held:
        raise EmptySplitError(
            "the validation split would be empty (verl's trainer cannot load an empty "
            "val.parquet): name a --val-env, raise --val-fraction above 0, or give two or "
            "more environments"
        )
    return {
        "train": [t for t in tasks if t.env_id not in held],
        "val": [t for t in tasks if t.env_id in held],
    }


def split_by_task(
    tasks: Sequence[PreparedTask], *, val_fraction: float = DEFAULT_VAL_FRACTION, seed: str = "awm"
) -> dict[str, list[PreparedTask]]:
    """``{"train": [...], "val": [...]}`` holding out a seeded share of *tasks* (at least one, never all).

    For a single environment, where an environment split is impossible: the
    validation tasks share the training tasks' environment (in-distribution
    validation). Tasks rank by a seeded hash of ``env/task``, so adding tasks
    moves none of the others between splits.
    """
    if len(tasks) < 2:
        raise EmptySplitError(
            f"{len(tasks)} task(s) selected: a training and a validation split need at least "
            "two (add environments or tasks, or drop --complexity)"
        )
    if val_fraction <= 0:
        raise EmptySplitError(
            "the validation split would be empty (verl's trainer cannot load an empty "
            "val.parquet): raise --val-fraction above 0"
        )
    count = _held_count(len(tasks), val_fraction)
    ranked = sorted(tasks, key=lambda t: _rank(f"{t.env_id}/{t.task_id}", seed))
    held = {(t.env_id, t.task_id) for t in ranked[:count]}
    return {
        "train": [t for t in tasks if (t.env_id, t.task_id) not in held],
        "val": [t for t in tasks if (t.env_id, t.task_id) in held],
    }


def split_tasks(
    tasks: Sequence[PreparedTask],
    *,
    val_envs: Sequence[str] = (),
    val_fraction: float = DEFAULT_VAL_FRACTION,
    seed: str = "awm",
) -> tuple[dict[str, list[PreparedTask]], str]:
    """The splits and how they were made: ``"environment"``, or ``"task"`` for a single environment.

    An environment split (out-of-distribution validation) whenever there are two
    or more environments or ``val_envs`` are named; otherwise a task split.
    """
    if not tasks:
        raise EmptySplitError(
            "no task selected: check the environment names, --complexity, or validate the "
            "environments (only proven tasks are kept unless --include-unproven)"
        )
    if val_envs or len({t.env_id for t in tasks}) > 1:
        splits = split_by_environment(
            tasks, val_envs=val_envs, val_fraction=val_fraction, seed=seed
        )
        return splits, "environment"
    return split_by_task(tasks, val_fraction=val_fraction, seed=seed), "task"


def paper_batch_size() -> int:
    """Tasks per training step of the paper recipe (``data.train_batch_size``): one batch."""
    from awm_train.recipes import RecipeError, load_recipe

    try:
        overrides = load_recipe(PAPER_RECIPE).overrides
    except RecipeError:
        return _PAPER_BATCH_FALLBACK
    for override in overrides:
        key, _, value = override.lstrip("+").partition("=")
        if key == "data.train_batch_size" and value.strip().isdigit():
            return int(value)
    return _PAPER_BATCH_FALLBACK


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
            **task.bundle.row_fields(),  # env_id, where its bundle is, its digest
            "task_id": task.task_id,
            "complexity": task.complexity,
            "task_sha256": task.task_sha256,
            # every row has both fields (one parquet schema): "" and 0 when unperturbed
            "perturbation": task.perturbation,
            "perturbation_seed": task.perturbation_seed,
        },
    }


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def prepare_dataset(
    splits: dict[str, list[PreparedTask]], out: Path, *, filters: dict[str, Any]
) -> dict[str, Any]:
    """Write ``train.parquet``, ``val.parquet`` and ``manifest.json`` under ``out``.

    Raises :class:`EmptySplitError` (writing nothing) when a split has no task.
    """
    empty = [name for name in ("train", "val") if not splits.get(name)]
    if empty:
        raise EmptySplitError(
            f"the {' and '.join(empty)} split would be empty: verl cannot load an empty "
            "parquet file (prepare again with --val-env or --val-fraction)"
        )
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
                t.env_id,
                {
                    "split": split,
                    "source": t.source,
                    "bundle_sha256": t.bundle_sha256,
                    "bundle_path": t.bundle_path,
                },
            )
    manifest = {
        "version": MANIFEST_VERSION,
        "filters": filters,
        "files": files,
        "counts": {
            split: {
                "environments": len({t.env_id for t in ts}),
                "tasks": len(ts),
                **({"perturbed": _perturbed(ts)} if _perturbed(ts) else {}),
            }
            for split, ts in splits.items()
        },
        "environments": dict(sorted(envs.items())),
        "tasks": {split: [asdict(t) for t in ts] for split, ts in splits.items()},
    }
    text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False)
    (out / "manifest.json").write_text(text + "\n", encoding="utf-8")
    manifest["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return manifest


def _perturbed(tasks: Sequence[PreparedTask]) -> dict[str, int]:
    """Rows per perturbation, for the manifest's counts."""
    counts: dict[str, int] = {}
    for t in tasks:
        if t.perturbation:
            counts[t.perturbation] = counts.get(t.perturbation, 0) + 1
    return dict(sorted(counts.items()))


def _manifest_env_ref(task: PreparedTask, refs: dict[str, str | Path]) -> str | Path:
    """Where to load a manifest's environment here: given, its recorded folder, else by name."""
    if task.env_id in refs:
        return refs[task.env_id]
    if task.bundle_path and (Path(task.bundle_path) / "manifest.json").is_file():
        return Path(task.bundle_path)
    return task.bundle.name


def splits_from_manifest(
    manifest: dict[str, Any], env_refs: dict[str, str | Path] | None = None
) -> dict[str, list[PreparedTask]]:
    """The manifest's exact splits, checked against the installed environments' content.

    Each environment is looked up in ``env_refs``, then at the folder the manifest
    recorded, then by name (catalog, ``AWM_ENV_PATH``, pulled bundles); the rows
    then record where it was found on this machine.
    """
    from awm_envs import load_environment

    refs = env_refs or {}
    found: dict[str, BundleRef] = {}
    tasks_by_env: dict[str, dict[str, str]] = {}
    out: dict[str, list[PreparedTask]] = {}
    for split, rows in manifest["tasks"].items():
        chosen = []
        for row in rows:
            t = PreparedTask(**row)
            if t.env_id not in found:
                env = load_environment(_manifest_env_ref(t, refs))
                found[t.env_id] = bundle_ref(env)
                tasks_by_env[t.env_id] = {x.id: task_digest(x) for x in env.tasks}
            here = found[t.env_id]
            if here.digest != t.bundle_sha256:
                raise ManifestMismatchError(
                    f"environment {t.env_id!r} differs from the manifest's "
                    f"(bundle sha256 {here.digest[:12]} != {t.bundle_sha256[:12]})"
                )
            if tasks_by_env[t.env_id].get(t.task_id) != t.task_sha256:
                raise ManifestMismatchError(
                    f"task {t.env_id}/{t.task_id} is missing or differs from the manifest's"
                )
            chosen.append(
                replace(t, source=here.source, bundle_path=here.path, bundle_pull=here.pull)
            )
        out[split] = chosen
    return out
