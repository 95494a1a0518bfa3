"""Package a scenario's accepted artifacts as an environment bundle, proven by the awm-envs runtime.

The bundle is written to a staging folder, loaded by the runtime's own loader
(which re-executes the SQL, imports the app, derives the tools and checks the
tasks against them), and only then moved into place atomically. A bundle the
runtime rejects is not shipped; its problems are reported instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from awm_core.atomic import atomic_replace_dir, atomic_write_text
from awm_core.models import CreatedWith, EnvironmentManifest, Scenario, Task
from awm_synth import __version__
from awm_synth.config import SynthConfig
from awm_synth.store.artifacts import DatabaseSchema, SeedData, TaskSet, ToolCode, VerifierModule


class BundleRejectedError(Exception):
    """The runtime refused the packaged bundle; ``problems`` says why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def build_tasks(tasks: TaskSet, verifiers: VerifierModule) -> list[Task]:
    """Tasks that were proven (failed proofs are left out), with their replayable solutions."""
    out = []
    for draft in tasks.tasks:
        solution = verifiers.solutions.get(draft.id)
        if solution is None or draft.id in verifiers.failed_tasks:
            continue
        negatives = [solution.wrong_solution] if solution.wrong_solution else []
        out.append(
            Task(
                id=draft.id,
                instruction=draft.instruction,
                complexity=draft.complexity,
                reference_solution=solution.reference_solution,
                reference_answer=solution.reference_answer,
                verifier=solution.verifier,
                expects_refusal=draft.expects_refusal,
                success_criteria=draft.success_criteria,
                failure_criteria=draft.failure_criteria,
                negative_examples=negatives,
            )
        )
    return out


def manifest_json(scenario: Scenario, config: SynthConfig) -> str:
    """The bundle's ``manifest.json`` text for ``scenario``."""
    manifest = EnvironmentManifest(
        id=scenario.name.lower(),
        name=scenario.name.replace("_", " ").title(),
        description=scenario.description,
        category=scenario.category or "uncategorised",
        created_with=CreatedWith(tool="awm-synth", version=__version__, model=config.backend),
        reference_time=config.reference_time,
        user_id=config.user_id,
    )
    return json.dumps(manifest.model_dump(mode="json", exclude_none=True), indent=2) + "\n"


def bundle_files(
    scenario: Scenario,
    config: SynthConfig,
    schema: DatabaseSchema,
    seed: SeedData,
    code: ToolCode,
    tasks: list[Task],
    verifiers: VerifierModule,
) -> dict[str, str]:
    """Every file of the bundle, by name: what is staged, checked and installed."""
    return {
        "manifest.json": manifest_json(scenario, config),
        "schema.sql": schema.sql(),
        "seed.sql": seed.sql(),
        "app.py": code.source,
        "tasks.json": json.dumps(
            [t.model_dump(mode="json", exclude_defaults=True) for t in tasks], indent=2
        )
        + "\n",
        "verifiers.py": verifiers.source,
    }


def stage_files(target: Path, files: dict[str, str]) -> Path:
    """Write ``files`` to a fresh staging folder next to ``target`` and return it."""
    staging = target.with_name(f".staging-{target.name}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, text in files.items():
        atomic_write_text(staging / name, text)
    return staging


def install_staged(staging: Path, target: Path, problems: list[str]) -> Path:
    """Move a checked staging folder into place, or discard it and raise if it has problems."""
    if problems:
        shutil.rmtree(staging, ignore_errors=True)
        raise BundleRejectedError(problems)
    atomic_replace_dir(staging, target)
    return target


def write_bundle(
    target: Path,
    scenario: Scenario,
    config: SynthConfig,
    schema: DatabaseSchema,
    seed: SeedData,
    code: ToolCode,
    tasks: list[Task],
    verifiers: VerifierModule,
) -> Path:
    """Write, check with the runtime in this process (trusted), and atomically install the bundle.

    The pipeline's default path stages the same files and runs the runtime's
    check in a sandboxed child instead (:meth:`awm_synth.checks.sandbox.CheckSandbox.bundle_problems`).
    """
    staging = stage_files(
        target, bundle_files(scenario, config, schema, seed, code, tasks, verifiers)
    )
    return install_staged(staging, target, runtime_problems(staging, sandbox_verifiers=False))


def runtime_problems(path: Path, *, sandbox_verifiers: bool = False) -> list[str]:
    """Load the bundle with the awm-envs runtime and validate every task there.

    The runtime's validator replays each reference solution through the real
    instance API (not this package's harness), checks the initial state is
    not already complete and that the wrong solution fails.
    This imports the app in the calling process: the pipeline calls it in a
    sandboxed child (with ``sandbox_verifiers``), or here on ``--trusted`` runs.
    """
    from awm_envs import BundleError, load_bundle, validate_environment

    try:
        load_bundle(path)
    except BundleError as exc:
        return [str(p) for p in exc.problems]
    result = validate_environment(path, sandbox=sandbox_verifiers)
    problems = list(result.problems)
    for task in result.tasks:
        if not task.passed:
            problems.append(
                f"task {task.task_id}: " + ("; ".join(task.problems) or "failed validation")
            )
    return problems
