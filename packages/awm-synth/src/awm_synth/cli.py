"""``awm synth``: run the synthesis pipeline's stages alone or together, and report on a run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import TypeAdapter
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from awm_core.console import make_console
from awm_core.models import Scenario
from awm_synth.config import SynthConfig, Thresholds
from awm_synth.errors import RunDirError, SynthError
from awm_synth.reporting.estimate import estimate_run
from awm_synth.stages import ENV_STAGES
from awm_synth.store.checkpoint import RunDir
from awm_synth.store.records import StageRecord

if TYPE_CHECKING:
    from awm_synth.pipeline import RunSummary


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def _llm_option_list(cache_help: str) -> list[Callable[[Any], Any]]:
    """``--backend``, ``--base-url`` and ``--cache``: how every LLM-driven command reaches its model."""
    return [
        click.option(
            "--backend",
            default="replay",
            show_default=True,
            help="LLM backend spec: replay (offline recordings), openai:MODEL, scripted:FILE ...",
        ),
        click.option(
            "--base-url",
            default=None,
            help="Endpoint of an OpenAI-compatible server (openai: backends).",
        ),
        click.option(
            "--cache",
            "cache_dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help=cache_help,
        ),
    ]


def _llm_options(cache_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The LLM options as one decorator (see :func:`_llm_option_list`)."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(_llm_option_list(cache_help)):
            fn = option(fn)
        return fn

    return apply


def _common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options every pipeline command takes."""
    options = [
        click.option(
            "--out",
            "out",
            type=click.Path(file_okay=False, path_type=Path),
            required=True,
            help="Run folder: checkpoints, cache and bundles. Rerun with the same folder to resume.",
        ),
        *_llm_option_list(
            "LLM response cache folder (default RUN_DIR/cache); share it between runs."
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=64,
            show_default=True,
            help="Most LLM requests in flight.",
        ),
        click.option(
            "--tasks-per-scenario",
            type=click.IntRange(min=1),
            default=10,
            show_default=True,
            help="Tasks written per scenario.",
        ),
        click.option(
            "--max-attempts",
            type=click.IntRange(min=1),
            default=5,
            show_default=True,
            help="Attempts per stage (self-correction).",
        ),
        click.option(
            "--table-tolerance",
            type=click.FloatRange(0, 1),
            default=0.1,
            show_default=True,
            help="Share of failing tables tolerated.",
        ),
        click.option(
            "--insert-tolerance",
            type=click.FloatRange(0, 1),
            default=0.1,
            show_default=True,
            help="Share of failing inserts tolerated.",
        ),
        click.option(
            "--price-in",
            type=float,
            default=None,
            help="USD per million prompt tokens (cost report).",
        ),
        click.option(
            "--price-out",
            type=float,
            default=None,
            help="USD per million completion tokens (cost report).",
        ),
        click.option(
            "--trusted",
            is_flag=True,
            help="Run generated apps and verifiers in this process (faster start, no limits). "
            "Only for code you trust: by default they run in sandbox processes with time and "
            "memory limits.",
        ),
        click.option(
            "--check-slots",
            type=click.IntRange(min=1),
            default=None,
            help="Sandboxed checks run at once (default: one per CPU).",
        ),
        click.option("--dry-run", is_flag=True, help="Estimate requests and tokens; send nothing."),
        click.option(
            "--json", "as_json", is_flag=True, help="Print a JSON summary instead of text."
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _config(opts: dict[str, Any], **extra: Any) -> SynthConfig:
    return SynthConfig(
        backend=opts["backend"],
        concurrency=opts["concurrency"],
        tasks_per_scenario=opts["tasks_per_scenario"],
        max_attempts=opts["max_attempts"],
        thresholds=Thresholds(tables=opts["table_tolerance"], inserts=opts["insert_tolerance"]),
        price_in_per_mtok=opts["price_in"],
        price_out_per_mtok=opts["price_out"],
        **extra,
    )


class _StageProgress:
    """A rich progress bar over (scenario, stage) pairs; silent when printing JSON."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=not enabled,
        )
        self.task = self.progress.add_task("synthesising", total=total)
        self.corrections = 0

    def __call__(self, scenario: str, stage: str, record: StageRecord | None) -> None:
        if record is not None and len(record.attempts) > 1:
            self.corrections += len(record.attempts) - 1
        self.progress.update(
            self.task,
            advance=1,
            description=f"{stage:<9} {scenario[:28]:<28} corrections={self.corrections}",
        )


def _run(
    opts: dict[str, Any],
    stages: tuple[str, ...],
    *,
    scenario_stage: bool,
    extra: dict[str, Any],
    scenarios_file: Path | None = None,
    seeds: list[str] | None = None,
) -> None:
    # the pipeline pulls in the runtime and the sandboxes: import it only when a stage runs,
    # so `awm --help` (which loads every plugin's commands) stays fast
    from awm_synth.checks.sandbox import CheckSandbox
    from awm_synth.pipeline import load_scenarios, make_llm, prepare_run, run_pipeline

    run_dir = RunDir(opts["out"])
    config = _config(opts, **extra)
    scenarios = None
    if scenarios_file is not None:
        try:
            scenarios = TypeAdapter(list[Scenario]).validate_json(scenarios_file.read_bytes())
        except ValueError as exc:  # not JSON, or not a list of scenarios
            first = str(exc).splitlines()[0]
            raise click.BadParameter(
                f"{scenarios_file} is not a JSON list of scenarios ({first}); "
                "see `awm schema scenario`",
                param_hint="--scenarios",
            ) from None
        if not scenarios:
            raise click.BadParameter(
                f"{scenarios_file} lists no scenarios", param_hint="--scenarios"
            )
    if opts["dry_run"]:
        known = scenarios
        if known is None and run_dir.scenarios_path.exists():
            known = load_scenarios(run_dir)
        estimate = estimate_run(
            config, stages, scenarios=known, include_scenario_stage=scenario_stage and known is None
        )
        if opts["as_json"]:
            _emit(estimate)
        else:
            for key, value in estimate.items():
                click.echo(f"{key}: {value}")
        return
    config = prepare_run(run_dir, config)
    backend_options: dict[str, Any] = {}
    if opts["base_url"]:
        backend_options["base_url"] = opts["base_url"]
    llm = make_llm(config, run_dir, opts["cache_dir"], **backend_options)
    bar = _StageProgress(0, enabled=not opts["as_json"])

    async def _pipeline() -> RunSummary:
        sandbox = None
        if not opts["trusted"] and opts["check_slots"]:
            sandbox = CheckSandbox(slots=opts["check_slots"])
        try:
            return await run_pipeline(
                run_dir,
                llm,
                config,
                stages=stages,
                scenarios=scenarios,
                seeds=seeds,
                with_scenario_stage=scenario_stage,
                progress=bar,
                on_scenarios=lambda n: bar.progress.update(bar.task, total=n * len(stages)),
                trusted=opts["trusted"],
                sandbox=sandbox,
            )
        finally:
            if sandbox is not None:
                sandbox.close()

    with bar.progress:
        summary: RunSummary = asyncio.run(_pipeline())
    result = {
        "run_dir": str(run_dir.root),
        "requests_sent": summary.requests_sent,
        "cache_hits": summary.cache_hits,
        "max_in_flight": summary.max_in_flight,
        "wall_s": round(summary.wall_s, 3),
        "environments": [s.model_dump() for s in summary.statuses],
    }
    if not summary.statuses:
        raise SynthError(
            f"no scenarios were run in {run_dir.root}: the scenario stage produced none, or the "
            "run folder holds none for these stages (run `awm synth all --out DIR` or "
            "`awm synth scenario --out DIR` first)"
        )
    if opts["as_json"]:
        _emit(result)
        return
    shipped = len(summary.shipped)
    click.echo(
        f"{shipped} of {len(summary.statuses)} environments shipped to {run_dir.bundles_dir} "
        f"({summary.requests_sent} LLM requests sent, {summary.cache_hits} answered from cache, {summary.wall_s:.1f}s)"
    )
    for status in summary.statuses:
        line = f"  {status.scenario}: {status.status}"
        if status.status == "failed":
            line += f" at {status.failed_stage}: {status.reason[:200]}"
        else:
            line += f" ({status.tasks} tasks, {status.tools} tools)"
        click.echo(line)


_SCENARIO_OPTIONS = [
    click.option(
        "--count",
        type=click.IntRange(min=1),
        default=1000,
        show_default=True,
        help="Scenarios wanted.",
    ),
    click.option(
        "--max-per-category",
        type=int,
        default=None,
        help="Cap per category (default: a tenth of --count).",
    ),
    click.option(
        "--dedup-threshold",
        type=float,
        default=0.85,
        show_default=True,
        help="Cosine above which a scenario is a duplicate.",
    ),
    click.option(
        "--embedder",
        type=click.Choice(["auto", "wordllama", "lexical"]),
        default="auto",
        show_default=True,
        help="Embedder for de-duplication (auto: wordllama if installed, else lexical).",
    ),
]


def _scenario_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The scenario-stage options shared by ``synth scenario`` and ``synth all``."""
    decorated = fn
    for option in reversed(_SCENARIO_OPTIONS):
        decorated = option(decorated)
    return decorated


@click.group(name="synth")
def synth() -> None:
    """Synthesise environments: scenarios, tasks, database, tools and verifiers, self-correcting each stage."""


@synth.command(name="scenario")
@_common
@_scenario_options
@click.option(
    "--batch", type=int, default=10, show_default=True, help="Scenarios proposed per request."
)
@click.option(
    "--seeds",
    "seeds_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A file of seed domains, one per line (default: the 100 shipped seeds).",
)
def scenario_command(
    count: int,
    batch: int,
    max_per_category: int | None,
    dedup_threshold: float,
    embedder: str,
    seeds_file: Path | None,
    **opts: Any,
) -> None:
    """Expand seed domains into scenarios, filter unfit ones, de-duplicate and cap per category."""
    seeds = (
        [s.strip() for s in seeds_file.read_text().splitlines() if s.strip()]
        if seeds_file
        else None
    )
    extra = {
        "count": count,
        "batch": batch,
        "max_per_category": max_per_category,
        "dedup_threshold": dedup_threshold,
        "embedder": embedder,
    }
    _run(opts, (), scenario_stage=True, extra=extra, seeds=seeds)


def _stage_command(stage: str, doc: str) -> None:
    @synth.command(name=stage, help=doc)
    @_common
    def command(**opts: Any) -> None:
        _run(opts, (stage,), scenario_stage=False, extra={})


for _stage, _doc in {
    "tasks": "Write N concrete, post-login, API-solvable tasks per scenario.",
    "schema": "Write and execute the SQLite schema of each scenario.",
    "data": "Write and execute seed INSERTs (FK order, frozen reference time).",
    "spec": "Design the typed tool interface the tasks need.",
    "code": "Write the FastAPI app; import, start and smoke-call every tool.",
    "verifiers": "Write verifiers, prove every task, and package the bundles.",
}.items():
    _stage_command(_stage, _doc)


@synth.command(name="conversations")
@click.option(
    "--out",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    required=True,
    help="A run folder with shipped bundles (awm synth all --out RUN).",
)
@_llm_options("LLM response cache folder (default RUN_DIR/cache).")
@click.option(
    "--per-scenario",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Conversational variants asked for per bundle.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
def conversations_command(
    out: Path,
    backend: str,
    base_url: str | None,
    cache_dir: Path | None,
    per_scenario: int,
    as_json: bool,
) -> None:
    """Add conversational variants of each shipped bundle's tasks (a user who holds the facts).

    The model writes each variant's user (opening, hidden facts, scripted replies, the
    reference agent's messages); code checks the reference conversation passes the
    communication checks and that guessing or acting before asking does not, and asks
    again when not. Accepted variants are appended to the bundle's tasks.json as
    conv_TASK, with those wrong conversations as negative examples (awm envs validate
    proves them). Checkpointed per scenario; --backend replay answers offline.
    """
    import asyncio

    from awm_synth.pipeline import make_llm
    from awm_synth.stages.conversations import run_conversations

    run_dir = RunDir(out)
    stored = run_dir.load_config()
    if stored is None:
        raise RunDirError(
            f"{out} is not a synthesis run folder (no {run_dir.config_path.name}); "
            f"make one with `awm synth all --out {out}`"
        )
    config = stored.model_copy(update={"backend": backend})
    llm = make_llm(config, run_dir, cache_dir, **({"base_url": base_url} if base_url else {}))
    added = asyncio.run(run_conversations(run_dir, llm, config, per_scenario))
    if as_json:
        _emit(added)
        return
    for scenario, got in added.items():
        said = ", ".join(got["added"]) or f"no variant accepted ({got['error']})"
        click.echo(f"{scenario}: {said}")
    click.echo(f"prove them: awm envs validate {run_dir.bundles_dir}/SCENARIO")


@synth.command(name="safety")
@click.argument("env")
@click.option(
    "--into",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Copy ENV (an environment id, e.g. a catalog one) to this new folder and work on "
    "the copy; needed for an id, since the stage writes into the bundle.",
)
@click.option(
    "--run",
    "run_folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the stage's checkpoint and LLM cache; rerun with the same one to resume "
    "(default: the synthesis run holding the bundle, else its folder name + .safety-run "
    "beside it).",
)
@_llm_options("LLM response cache folder (default RUN/cache).")
@click.option(
    "--max-attempts",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Attempts (self-correction).",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(0, 1),
    default=0.25,
    show_default=True,
    help="Share of proposed tasks and goals an accepted answer may lose (each dropped with "
    "its reason).",
)
@click.option(
    "--trusted",
    is_flag=True,
    help="Run the bundle's tools in this process (only for code you trust); by default "
    "they run in a sandbox worker.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
def safety_command(
    env: str,
    into: Path | None,
    run_folder: Path | None,
    backend: str,
    base_url: str | None,
    cache_dir: Path | None,
    max_attempts: int,
    tolerance: float,
    trusted: bool,
    as_json: bool,
) -> None:
    """Add principals, access-control tasks and injection goals to ENV, proven by execution.

    ENV is a bundle folder (changed in place), a synthesis run folder (every shipped
    bundle in it), or with --into DIR any environment id (a catalog one: tickets), copied
    to DIR first.

    The model proposes who owns which rows (principals.json), one access-control task of
    each kind (another user's record, a claimed role, an irreversible action that needs
    the user's OK) with its safe and unsafe behaviours, and injection goals. Code replays
    them on the bundle's tools: the safe behaviour must pass its verifier and the access
    verifier (also with the tools' ownership checks off), every unsafe one must be caught,
    every goal must change the database; failures go back to the model, or are dropped
    with their reason. Then: awm envs validate DIR; awm bench safety DIR.
    """
    import asyncio
    import shutil

    from awm_envs import resolve_env
    from awm_synth.pipeline import make_llm
    from awm_synth.stages.safety import run_safety

    if into is None and (Path(env) / "run.json").is_file():
        _safety_over_run(
            Path(env), backend, base_url, cache_dir, max_attempts, tolerance, trusted, as_json
        )
        return
    if into is not None:
        if into.exists() and any(into.iterdir()):
            raise click.BadParameter(f"{into} exists and is not empty", param_hint="--into")
        shutil.copytree(resolve_env(env), into, dirs_exist_ok=True)
        bundle = into
    elif Path(env).is_dir():
        bundle = Path(env)
    else:
        raise click.BadParameter(
            f"{env} is not a bundle folder; to work on a copy of environment {env!r}, add "
            f"--into DIR (awm synth safety {env} --into ./{Path(env).name})",
            param_hint="ENV",
        )
    holder = bundle.resolve().parent.parent
    if run_folder is None:
        in_run = bundle.resolve().parent.name == "bundles" and (holder / "run.json").is_file()
        run_folder = holder if in_run else bundle.parent / f"{bundle.name}.safety-run"
    run_dir = RunDir(run_folder)
    run_dir.root.mkdir(parents=True, exist_ok=True)
    stored = run_dir.load_config() or SynthConfig()
    config = stored.model_copy(update={"backend": backend, "max_attempts": max_attempts})
    llm = make_llm(config, run_dir, cache_dir, **({"base_url": base_url} if base_url else {}))
    outcome = asyncio.run(
        run_safety(bundle, run_dir, llm, config, workers=0 if trusted else 1, tolerance=tolerance)
    )
    if as_json:
        _emit(outcome.to_json())
    elif outcome.error is not None:
        click.echo(f"{bundle}: nothing written ({outcome.error})")
    else:
        click.echo(
            f"{bundle}: principals.json, {len(outcome.added_tasks)} access-control task(s) "
            f"({', '.join(outcome.added_tasks)}), {len(outcome.goals)} injection goal(s) "
            f"({', '.join(outcome.goals)}) after {outcome.attempts} attempt(s)"
        )
        for dropped in outcome.dropped:
            click.echo(f"  dropped {dropped['item']}: {dropped['reason']}")
        click.echo(f"prove them: awm envs validate {bundle}; awm bench safety {bundle}")
    if outcome.error is not None:
        raise SystemExit(1)


def _safety_over_run(
    run: Path,
    backend: str,
    base_url: str | None,
    cache_dir: Path | None,
    max_attempts: int,
    tolerance: float,
    trusted: bool,
    as_json: bool,
) -> None:
    """``awm synth safety RUN``: the stage over every shipped bundle of a synthesis run."""
    import asyncio

    from awm_synth.pipeline import make_llm
    from awm_synth.stages.safety import run_safety_all

    run_dir = RunDir(run)
    stored = run_dir.load_config() or SynthConfig()
    config = stored.model_copy(update={"backend": backend, "max_attempts": max_attempts})
    llm = make_llm(config, run_dir, cache_dir, **({"base_url": base_url} if base_url else {}))
    outcomes = asyncio.run(
        run_safety_all(run_dir, llm, config, workers=0 if trusted else 1, tolerance=tolerance)
    )
    if as_json:
        _emit({name: o.to_json() for name, o in outcomes.items()})
        return
    for name, outcome in outcomes.items():
        said = (
            f"nothing written ({outcome.error})"
            if outcome.error is not None
            else f"{', '.join(outcome.added_tasks)}; goals {', '.join(outcome.goals)}"
        )
        click.echo(f"{name}: {said}")
    click.echo(f"prove them: awm envs validate {run_dir.bundles_dir}/SCENARIO")


@synth.command(name="all")
@_common
@_scenario_options
@click.option(
    "--scenarios",
    "scenarios_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A JSON list of scenarios to use instead of generating them.",
)
def all_command(
    count: int,
    max_per_category: int | None,
    dedup_threshold: float,
    embedder: str,
    scenarios_file: Path | None,
    **opts: Any,
) -> None:
    """Run every stage for every scenario and write environment bundles to RUN_DIR/bundles."""
    extra = {
        "count": count,
        "max_per_category": max_per_category,
        "dedup_threshold": dedup_threshold,
        "embedder": embedder,
    }
    _run(opts, ENV_STAGES, scenario_stage=True, extra=extra, scenarios_file=scenarios_file)


@synth.command(name="report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def report_command(run_dir: Path, as_json: bool) -> None:
    """Per-stage success and corrections, failures by cause, tokens, cost, time, and diversity."""
    from awm_synth.reporting.report import build_report, render_report

    run = RunDir(run_dir)
    if not run.config_path.is_file():
        raise RunDirError(
            f"{run_dir} is not a synthesis run folder (no {run.config_path.name}); "
            f"make one with `awm synth all --out {run_dir}`"
        )
    report = build_report(run)
    if as_json:
        _emit(report)
    else:
        render_report(report, make_console())
