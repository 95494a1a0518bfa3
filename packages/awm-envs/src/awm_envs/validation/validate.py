"""Prove every task of an environment: solvable, not already solved, and not lenient.

For each task, on fresh instances of the environment:

(a) the verifier says *not complete* on the untouched initial database;
(b) the reference solution replays without a tool error and the verifier then
    says *complete* (with ``reference_answer`` as the final answer);
(c) plausible wrong trajectories are judged *not complete*: the reference
    solution with its last write dropped, a wrong or empty final answer for
    answer-judged tasks (read-only and refusal tasks), "did nothing but claimed
    success" for write tasks, and the task's hand-written ``negative_examples``.

Verifiers of the shipped catalog run through :func:`awm_envs.verifiers.trusted.run_trusted`
(trusted, in-process). Any other bundle's verifiers (synthesized, imported) run in the
sandbox (:class:`~awm_envs.verifiers.pool.VerifierPool`, never in this process);
``sandbox=True/False`` forces either way, and ``verifier_pool=`` gives the sandbox to use.

The parts: :mod:`~awm_envs.validation.results` (what is reported),
:mod:`~awm_envs.validation.runner` (the bundle's verifiers, run either way),
:mod:`~awm_envs.validation.replay` (trajectories on fresh instances),
:mod:`~awm_envs.validation.taskcheck` (one task's three properties) and
:mod:`~awm_envs.validation.leakcheck` (state shared between instances).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from awm_core.models import EnvironmentManifest
from awm_envs.bundle.sources import CATALOG_DIR
from awm_envs.errors import BundleError
from awm_envs.validation.judge import EvidenceJudge
from awm_envs.validation.leakcheck import LEAK_PHRASE, LeakCheck
from awm_envs.validation.replay import open_environment
from awm_envs.validation.results import EnvValidation, TaskValidation
from awm_envs.validation.runner import VerifierRunner
from awm_envs.validation.taskcheck import validate_task_with_replay
from awm_envs.verifiers.pool import VerifierPool
from awm_envs.verifiers.trusted import VerifierLoadError

__all__ = [
    "CATALOG_DIR",
    "LEAK_PHRASE",
    "EnvValidation",
    "TaskValidation",
    "catalog_env_ids",
    "in_catalog",
    "resolve_env_dir",
    "validate_catalog",
    "validate_environment",
]


def catalog_env_ids(catalog: Path = CATALOG_DIR) -> list[str]:
    """Ids of the environments shipped in the catalog (folders with a manifest)."""
    if not catalog.is_dir():
        return []
    return sorted(p.name for p in catalog.iterdir() if (p / "manifest.json").is_file())


def resolve_env_dir(
    env: str | Path, catalog: Path = CATALOG_DIR, extra: list[Path] | None = None
) -> Path:
    """A bundle folder from a path, or an id in the catalog, ``extra`` folders, AWM_ENV_PATH or a plugin source."""
    path = Path(env)
    if (path / "manifest.json").is_file():
        return path
    candidate = catalog / str(env)
    if (candidate / "manifest.json").is_file():
        return candidate
    from awm_envs.bundle.sources import resolve_env
    from awm_envs.errors import EnvironmentNotFoundError

    try:
        return resolve_env(env, extra)
    except EnvironmentNotFoundError as exc:
        raise FileNotFoundError(str(exc)) from None


def in_catalog(env_dir: Path, catalog: Path = CATALOG_DIR) -> bool:
    """Whether ``env_dir`` is one of the shipped (hand-written, trusted) catalog bundles."""
    return env_dir.resolve().is_relative_to(catalog.resolve())


def _pool_for(
    env_dir: Path, pool: VerifierPool | None, sandbox: bool | None
) -> tuple[VerifierPool | None, VerifierPool | None]:
    """The sandbox to verify in (None: this process), and the same pool again when this call
    owns it (and must close it)."""
    if pool is not None:
        return pool, None
    if sandbox is False or (sandbox is None and in_catalog(env_dir)):
        return None, None
    owned = VerifierPool(size=1)  # sandboxed, always: there is no in-process fallback
    return owned, owned


def validate_environment(
    env: str | Path,
    *,
    task_ids: Iterable[str] | None = None,
    verifier_pool: VerifierPool | None = None,
    extra: list[Path] | None = None,
    sandbox: bool | None = None,
    check_leaks: bool = True,
    require_proof: bool = False,
    judge: EvidenceJudge | None = None,
) -> EnvValidation:
    """Validate every task (or the named ones) of one environment bundle or catalog id.

    ``sandbox`` None runs the verifiers of bundles outside the shipped catalog
    in the verifier sandbox; True runs every bundle's there; False runs them
    here (only for bundles you trust). ``verifier_pool`` is the sandbox to run them in
    (every bundle's, then); by default this call starts one when it needs it.
    ``check_leaks`` also fails an app whose tools keep state outside the
    database, shared by every instance in a process (see :class:`LeakCheck`);
    the problem says "module-level state leaks between instances".
    ``require_proof`` fails tasks without a reference solution; by default they get the
    checks that need none and are reported ``unproven`` (see :class:`TaskValidation`).
    ``judge`` decides the trajectories whose verifier only gathers evidence (the
    AWM-1K release's sql-mode verifiers); without one those tasks are reported
    ``undecided``.
    """
    from awm_envs.runtime.environment import is_cached, unload_environment

    env_dir = resolve_env_dir(env, extra=extra)
    pool, owned = _pool_for(env_dir, verifier_pool, sandbox)
    # loaded here only for this check: let it go after (a run over a 1,000-bundle release
    # would otherwise keep every app in memory); one the caller had loaded stays
    loaded_before = is_cached(env_dir)
    try:
        return _validate_environment(env_dir, task_ids, pool, check_leaks, require_proof, judge)
    finally:
        if owned is not None:
            owned.close()
        if not loaded_before:
            unload_environment(env_dir)


def _validate_environment(
    env_dir: Path,
    task_ids: Iterable[str] | None,
    pool: VerifierPool | None,
    check_leaks: bool = True,
    require_proof: bool = False,
    judge: EvidenceJudge | None = None,
) -> EnvValidation:
    result = EnvValidation(env_id=env_dir.name, path=str(env_dir))
    try:
        manifest = EnvironmentManifest.model_validate_json((env_dir / "manifest.json").read_bytes())
        result.env_id = manifest.id
        environment = open_environment(env_dir)
        tasks = environment.tasks
        run_verifier = VerifierRunner.for_bundle(env_dir, environment.verifier_source, pool)
    except (VerifierLoadError, OSError, ValueError) as exc:
        result.problems.append(str(exc))
        return result
    except BundleError as exc:
        result.problems.extend(str(p) for p in exc.problems)
        return result
    except Exception as exc:  # anything app.py raises at import
        result.problems.append(f"{type(exc).__name__}: {exc}")
        return result
    if not tasks:
        result.problems.append("the bundle has no tasks (tasks.json is missing or empty)")
    wanted = set(task_ids) if task_ids is not None else None
    leaks = LeakCheck(environment, run_verifier) if check_leaks else None
    for task in tasks:
        if wanted is not None and task.id not in wanted:
            continue
        validation, ref, second = validate_task_with_replay(
            result.env_id,
            environment,
            task,
            run_verifier,
            second_replay=leaks is not None,
            require_proof=require_proof,
            judge=judge,
        )
        result.tasks.append(validation)
        if leaks is not None:
            leaks.after_task(task, validation, ref, second)
    if leaks is not None:
        result.problems.extend(leaks.report())
    return result


def validate_catalog(
    env_ids: Iterable[str] | None = None,
    *,
    verifier_pool: VerifierPool | None = None,
    extra: list[Path] | None = None,
    sandbox: bool | None = None,
    require_proof: bool = False,
    judge: EvidenceJudge | None = None,
) -> list[EnvValidation]:
    """Validate the named environments, or the whole catalog when none are named.

    Each outcome is also recorded per bundle content, for ``awm envs list``, with
    how each task was decided (by its verifier's code, or by which judge model).
    ``verifier_pool``, ``sandbox``, ``require_proof`` and ``judge`` are passed to
    :func:`validate_environment`.
    """
    from awm_envs.validation.record import save_record

    ids = list(env_ids) if env_ids else catalog_env_ids()
    results = []
    for e in ids:
        result = validate_environment(
            e,
            verifier_pool=verifier_pool,
            extra=extra,
            sandbox=sandbox,
            require_proof=require_proof,
            judge=judge,
        )
        if not result.problems or result.tasks:
            save_record(
                result.env_id,
                Path(result.path),
                proven=sum(t.proven for t in result.tasks),
                tasks=len(result.tasks),
                passed=result.passed,
                decided_by={
                    t.task_id: {"by": t.decided_by, "judge_model": t.judge_model}
                    for t in result.tasks
                },
            )
        results.append(result)
    return results
