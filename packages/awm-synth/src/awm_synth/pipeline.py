"""Run stages over scenarios: concurrently, resumably, with progress and per-environment status.

Scenarios run as concurrent asyncio tasks; within one scenario the stages run
in order (each needs the previous artifacts). The run-wide limit on requests
in flight lives in :class:`SynthLLM`, so any number of scenarios can be
started at once. After each stage its checkpoint is written atomically; on
resume a stage with a checkpoint is loaded instead of run.

Generated code is executed only in sandboxes (:mod:`awm_synth.checks.sandbox`),
shared by every scenario of the run, unless ``trusted=True`` asks for the
in-process harness.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from awm_core import get_backend
from awm_core.llm.base import LLMBackend, LLMError
from awm_core.llm.cache import ResponseCache
from awm_core.models import Scenario
from awm_synth.checks.sandbox import CheckLimits, CheckSandbox, SandboxUnavailableError
from awm_synth.config import SynthConfig
from awm_synth.errors import RunDirError, SynthError
from awm_synth.llm.accounting import Pricing, pricing_for
from awm_synth.llm.client import SynthLLM
from awm_synth.llm.tags import GLOBAL_SCENARIO
from awm_synth.stages import ENV_STAGES
from awm_synth.stages import code as code_stage
from awm_synth.stages import data as data_stage
from awm_synth.stages import scenarios as scenario_stage
from awm_synth.stages import schema as schema_stage
from awm_synth.stages import spec as spec_stage
from awm_synth.stages import tasks as tasks_stage
from awm_synth.stages import verifiers as verifiers_stage
from awm_synth.stages.base import ScenarioContext
from awm_synth.store.artifacts import (
    DatabaseSchema,
    ScenarioSelection,
    SeedData,
    TaskSet,
    ToolCode,
    ToolInterfaceSpec,
    VerifierModule,
)
from awm_synth.store.bundle import (
    BundleRejectedError,
    build_tasks,
    bundle_files,
    install_staged,
    stage_files,
    write_bundle,
)
from awm_synth.store.checkpoint import EnvStatus, RunDir
from awm_synth.store.records import StageRecord

STAGE_RUNNERS = {
    "tasks": tasks_stage.run,
    "schema": schema_stage.run,
    "data": data_stage.run,
    "spec": spec_stage.run,
    "code": code_stage.run,
    "verifiers": verifiers_stage.run,
}
ARTIFACT_TYPES: dict[str, type[BaseModel]] = {
    "tasks": TaskSet,
    "schema": DatabaseSchema,
    "data": SeedData,
    "spec": ToolInterfaceSpec,
    "code": ToolCode,
    "verifiers": VerifierModule,
}

ProgressFn = Callable[[str, str, StageRecord | None], None]


@dataclass
class RunSummary:
    """What a pipeline call did: per-environment status and request counts."""

    statuses: list[EnvStatus] = field(default_factory=list)
    requests_sent: int = 0
    cache_hits: int = 0
    wall_s: float = 0.0
    max_in_flight: int = 0

    @property
    def shipped(self) -> list[EnvStatus]:
        return [s for s in self.statuses if s.status == "shipped"]


def make_llm(
    config: SynthConfig, run_dir: RunDir, cache_dir: Path | None = None, **backend_options: Any
) -> SynthLLM:
    """Build the backend named in ``config`` behind the cache and the concurrency limit."""
    prefix = config.backend.partition(":")[0]
    if prefix == "openai":
        backend_options.setdefault("max_concurrency", config.concurrency)
    backend: LLMBackend = get_backend(config.backend, **backend_options)
    pricing = pricing_for(config.backend)
    if config.price_in_per_mtok is not None or config.price_out_per_mtok is not None:
        pricing = Pricing(
            input_per_mtok=config.price_in_per_mtok or 0.0,
            output_per_mtok=config.price_out_per_mtok or 0.0,
        )
    cache = ResponseCache(cache_dir or run_dir.cache_dir)
    return SynthLLM(backend, cache=cache, concurrency=config.concurrency, pricing=pricing)


def prepare_run(run_dir: RunDir, config: SynthConfig, *, resume_config: bool = True) -> SynthConfig:
    """Create the run folder or reuse its stored configuration (resuming keeps the original settings)."""
    run_dir.root.mkdir(parents=True, exist_ok=True)
    stored = run_dir.load_config()
    if stored is not None and resume_config:
        return stored.model_copy(
            update={"concurrency": config.concurrency, "backend": config.backend}
        )
    run_dir.save_config(config)
    return config


async def run_scenario_stage(
    run_dir: RunDir, llm: SynthLLM, config: SynthConfig, *, seeds: list[str] | None = None
) -> ScenarioSelection:
    """The global stage: load its checkpoint or run it."""
    record = run_dir.load_stage(GLOBAL_SCENARIO, "scenario")
    if record is None:
        record = await scenario_stage.run(llm, config, seeds)
        run_dir.save_stage(record)
    assert record.artifact is not None
    return ScenarioSelection.model_validate(record.artifact)


def import_scenarios(run_dir: RunDir, scenarios: Sequence[Scenario]) -> ScenarioSelection:
    """Use a given scenario list instead of generating one (``--scenarios FILE``)."""
    selection = ScenarioSelection(
        scenarios=list(scenarios), requested=len(scenarios), embedder="imported"
    )
    if run_dir.load_stage(GLOBAL_SCENARIO, "scenario") is None:
        run_dir.save_stage(
            StageRecord(
                stage="scenario",
                scenario=GLOBAL_SCENARIO,
                accepted=True,
                artifact=selection.model_dump(mode="json"),
            )
        )
    return selection


def load_scenarios(run_dir: RunDir) -> list[Scenario]:
    record = run_dir.load_stage(GLOBAL_SCENARIO, "scenario")
    if record is None or record.artifact is None:
        raise RunDirError(
            f"{run_dir.root} has no scenarios yet: run `awm synth scenario --out {run_dir.root}` "
            "(or pass --scenarios FILE) first"
        )
    return ScenarioSelection.model_validate(record.artifact).scenarios


async def run_environment(
    run_dir: RunDir,
    llm: SynthLLM,
    config: SynthConfig,
    scenario: Scenario,
    stages: Sequence[str] = ENV_STAGES,
    *,
    package: bool = True,
    progress: ProgressFn | None = None,
    sandbox: CheckSandbox | None = None,
) -> EnvStatus | None:
    """Run ``stages`` for one scenario (loading earlier checkpoints), then package when complete.

    ``sandbox`` None runs the checks of generated code in this process (trusted).
    """
    ctx = ScenarioContext(scenario=scenario, llm=llm, config=config, sandbox=sandbox)
    first = ENV_STAGES.index(stages[0]) if stages else len(ENV_STAGES)
    for stage in ENV_STAGES:
        record = run_dir.load_stage(scenario.name, stage)
        if record is None:
            if stage not in stages:
                if ENV_STAGES.index(stage) < first:
                    raise RunDirError(
                        f"scenario {scenario.name!r} has no {stage!r} checkpoint; run "
                        f"`awm synth {stage} --out {run_dir.root}` first"
                    )
                break
            try:
                record = await STAGE_RUNNERS[stage](ctx)
            except (LLMError, SynthError) as exc:
                # Not checkpointed: a resumed run tries this stage again (answered requests are cached).
                status = EnvStatus(
                    scenario=scenario.name,
                    status="failed",
                    failed_stage=stage,
                    reason=f"{type(exc).__name__}: {exc}",
                )
                run_dir.save_status(status)
                return status
            await asyncio.to_thread(run_dir.save_stage, record)
            if progress:
                progress(scenario.name, stage, record)
        elif progress and stage in stages:
            progress(scenario.name, stage, None)
        if not record.accepted or record.artifact is None:
            last = record.attempts[-1] if record.attempts else None
            reason = "; ".join(last.errors[:3]) if last else "no usable artifact"
            status = EnvStatus(
                scenario=scenario.name,
                status="failed",
                failed_stage=stage,
                reason=f"{stage} still failing after {len(record.attempts)} attempt(s): {reason}",
            )
            run_dir.save_status(status)
            return status
        ctx.artifacts[stage] = ARTIFACT_TYPES[stage].model_validate(record.artifact)
    if not package or "verifiers" not in ctx.artifacts:
        return None
    existing = run_dir.load_status(scenario.name)
    if existing is not None and (
        existing.failed_stage == "package"
        or (existing.status == "shipped" and (run_dir.bundles_dir / scenario.name).is_dir())
    ):
        return existing
    if sandbox is None:
        return await asyncio.to_thread(_package, run_dir, config, scenario, ctx.artifacts)
    return await _package_sandboxed(run_dir, config, scenario, ctx.artifacts, sandbox)


async def _package_sandboxed(
    run_dir: RunDir,
    config: SynthConfig,
    scenario: Scenario,
    artifacts: dict[str, Any],
    sandbox: CheckSandbox,
) -> EnvStatus:
    """:func:`_package`, with the runtime's load-and-validate run in a sandboxed child."""
    target = run_dir.bundles_dir / scenario.name
    tasks = build_tasks(artifacts["tasks"], artifacts["verifiers"])
    if not tasks:
        return await asyncio.to_thread(_package, run_dir, config, scenario, artifacts)
    files = bundle_files(
        scenario,
        config,
        artifacts["schema"],
        artifacts["data"],
        artifacts["code"],
        tasks,
        artifacts["verifiers"],
    )
    staging = await asyncio.to_thread(stage_files, target, files)
    try:
        async with sandbox.slot():
            problems = await sandbox.bundle_problems(staging)
    except SandboxUnavailableError as exc:
        # The machine's fault, not the bundle's: not saved, so a resumed run packages it again.
        return EnvStatus(
            scenario=scenario.name, status="failed", failed_stage="package", reason=str(exc)
        )

    def install() -> None:
        install_staged(staging, target, problems)

    return await asyncio.to_thread(_package, run_dir, config, scenario, artifacts, install)


def _package(
    run_dir: RunDir,
    config: SynthConfig,
    scenario: Scenario,
    artifacts: dict[str, Any],
    install: Callable[[], object] | None = None,
) -> EnvStatus:
    """Write the bundle (``install`` when it was already staged and checked) and its status."""
    verifiers: VerifierModule = artifacts["verifiers"]
    tasks = build_tasks(artifacts["tasks"], verifiers)
    code: ToolCode = artifacts["code"]
    target = run_dir.bundles_dir / scenario.name
    if not tasks:
        status = EnvStatus(
            scenario=scenario.name,
            status="failed",
            failed_stage="package",
            reason="no task was proven",
        )
    else:
        try:
            if install is not None:
                install()
            else:
                write_bundle(
                    target,
                    scenario,
                    config,
                    artifacts["schema"],
                    artifacts["data"],
                    code,
                    tasks,
                    verifiers,
                )
        except BundleRejectedError as exc:
            status = EnvStatus(
                scenario=scenario.name,
                status="failed",
                failed_stage="package",
                reason="the awm-envs runtime rejected the bundle: " + "; ".join(exc.problems[:5]),
            )
        else:
            status = EnvStatus(
                scenario=scenario.name,
                status="shipped",
                bundle=str(target.relative_to(run_dir.root)),
                tasks=len(tasks),
                tools=len(code.tools),
                dropped_tasks=list(verifiers.failed_tasks),
            )
    run_dir.save_status(status)
    return status


async def run_pipeline(
    run_dir: RunDir,
    llm: SynthLLM,
    config: SynthConfig,
    *,
    stages: Sequence[str] = ENV_STAGES,
    scenarios: Sequence[Scenario] | None = None,
    seeds: list[str] | None = None,
    with_scenario_stage: bool = True,
    progress: ProgressFn | None = None,
    on_scenarios: Callable[[int], None] | None = None,
    trusted: bool = False,
    sandbox: CheckSandbox | None = None,
    limits: CheckLimits | None = None,
) -> RunSummary:
    """Run the scenario stage (unless scenarios are given) and ``stages`` for every scenario.

    Generated code runs in ``sandbox`` (by default one made for this run, one
    check slot per CPU, with ``limits``); ``trusted=True`` runs it in this
    process instead, for code you wrote or reviewed yourself.
    """
    started = time.perf_counter()
    if scenarios is not None:
        selected = import_scenarios(run_dir, scenarios).scenarios
    elif with_scenario_stage:
        selected = (await run_scenario_stage(run_dir, llm, config, seeds=seeds)).scenarios
    else:
        selected = load_scenarios(run_dir)
    if on_scenarios is not None:
        on_scenarios(len(selected))
    summary = RunSummary()
    if stages:
        own = None
        if not trusted and sandbox is None and set(stages) & {"code", "verifiers"}:
            own = sandbox = await CheckSandbox(limits=limits).__aenter__()
        try:
            results = await asyncio.gather(
                *(
                    run_environment(
                        run_dir,
                        llm,
                        config,
                        s,
                        stages,
                        progress=progress,
                        sandbox=None if trusted else sandbox,
                    )
                    for s in selected
                )
            )
        finally:
            if own is not None:
                own.close()
        summary.statuses = [r for r in results if r is not None]
    summary.requests_sent = llm.requests_sent
    summary.cache_hits = llm.cache.hits if llm.cache else 0
    summary.max_in_flight = llm.max_in_flight
    summary.wall_s = time.perf_counter() - started
    return summary
