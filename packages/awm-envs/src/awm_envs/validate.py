"""Prove every task of an environment: solvable, not already solved, and not lenient.

For each task, on fresh instances of the environment:

(a) the verifier says *not complete* on the untouched initial database;
(b) the reference solution replays without a tool error and the verifier then
    says *complete* (with ``reference_answer`` as the final answer);
(c) plausible wrong trajectories are judged *not complete*: the reference
    solution with its last write dropped, a wrong or empty final answer for
    answer-judged tasks (read-only and refusal tasks), "did nothing but claimed
    success" for write tasks, and the task's hand-written ``negative_examples``.

Verifiers of the shipped catalog run through
:func:`awm_envs.verifiers.run_native_verifier` (trusted, in-process). Any other
bundle's verifiers (synthesized, imported) run in the sandbox
(:class:`~awm_envs.verifiers.SandboxedVerifierRunner`, never in this process);
``sandbox=True/False`` forces either way, and
``run_verifier=`` swaps in any runner.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from pydantic import BaseModel, Field

from awm_core.models import (
    Complexity,
    EnvironmentManifest,
    Task,
    ToolCallStep,
    ToolResult,
    complexity_for_calls,
)
from awm_envs.errors import BundleError
from awm_envs.leakcheck import changed_names, module_state
from awm_envs.verifiers import (
    SandboxedVerifierRunner,
    VerifierLoadError,
    VerifierOutcome,
    load_verifier_source,
    load_verifiers,
    run_native_verifier,
)

__all__ = [
    "CATALOG_DIR",
    "LEAK_PHRASE",
    "EnvValidation",
    "TaskValidation",
    "TrajectoryCheck",
    "catalog_env_ids",
    "in_catalog",
    "resolve_env_dir",
    "validate_catalog",
    "validate_environment",
]

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"

# Wrong final answers tried on answer-judged tasks: none, empty, and a vague claim.
WRONG_ANSWERS: tuple[str | None, ...] = (None, "", "Done.")

VerifierRunner = Callable[[ModuleType, str, bytes, bytes, "str | None"], VerifierOutcome]


class TrajectoryCheck(BaseModel):
    """One replayed trajectory and what the verifier said about it."""

    kind: str = Field(
        description="initial | reference | dropped_last_write | wrong_answer | no_action | negative_example"
    )
    description: str
    tool_errors: list[str] = Field(default_factory=list)
    complete: bool
    expected_complete: bool
    verifier_error: str | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The verifier gave the expected verdict and did not fail itself."""
        return self.verifier_error is None and self.complete == self.expected_complete


class TaskValidation(BaseModel):
    """The validation of one task: the three properties and every trajectory behind them."""

    env_id: str
    task_id: str
    complexity: Complexity
    reference_calls: int
    expects_refusal: bool = False
    complexity_ok: bool
    initial_not_complete: bool
    reference_complete: bool
    wrong_rejected: bool
    problems: list[str] = Field(default_factory=list)
    checks: list[TrajectoryCheck] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (
            self.complexity_ok
            and self.initial_not_complete
            and self.reference_complete
            and self.wrong_rejected
            and not self.problems
        )


class EnvValidation(BaseModel):
    """The validation of one environment: its tasks, plus problems that stop all of them."""

    env_id: str
    path: str
    tasks: list[TaskValidation] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems and bool(self.tasks) and all(t.passed for t in self.tasks)


# --------------------------------------------------------------------------- instances


class _Instance(Protocol):
    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...
    def snapshot(self) -> bytes: ...
    def close(self) -> None: ...


class _RuntimeInstance:
    """Adapts the runtime's :class:`~awm_envs.instance.Instance` to the sync calls used here."""

    def __init__(self, inst: Any) -> None:
        self._inst = inst

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        result: ToolResult = self._inst.call_tool_sync(name, arguments)
        return result

    def snapshot(self) -> bytes:
        data: bytes = self._inst.snapshot()
        return data

    def close(self) -> None:
        self._inst.close()


class _RuntimeEnvironment:
    """An environment loaded by the awm-envs runtime, exactly as agents and trainers see it."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self.tasks: list[Task] = list(env.tasks)
        self.write_tools = {t.name for t in env.tools if (t.method or "GET").upper() != "GET"}
        self.module: ModuleType | None = getattr(getattr(env, "bundle", None), "module", None)

    def instance(self) -> _Instance:
        return _RuntimeInstance(self._env.instance())


def _open_environment(env_dir: Path) -> _RuntimeEnvironment:
    from awm_envs.environment import load_environment
    from awm_envs.preflight import check_bundle

    # app.py is loaded in a throwaway sandbox first (bundles outside the shipped catalog):
    # an os._exit or a hang at import is a clear problem, not a dead or stuck validator
    check_bundle(env_dir)
    return _RuntimeEnvironment(load_environment(env_dir))


# --------------------------------------------------------------------------- catalog


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
    from awm_envs.errors import EnvironmentNotFoundError
    from awm_envs.sources import resolve_env

    try:
        return resolve_env(env, extra)
    except EnvironmentNotFoundError as exc:
        raise FileNotFoundError(str(exc)) from None


# --------------------------------------------------------------------------- replay


@dataclass
class _Replay:
    initial: bytes
    final: bytes
    tool_errors: list[str]
    # (is_error, error_type, content) per step: compared by the cross-instance leak check
    results: list[tuple[bool, str | None, Any]] = field(default_factory=list)
    # the database before step ``middle_step`` (see ``snapshot_before`` of :func:`_replay`)
    middle: bytes | None = None
    middle_step: int | None = None

    def prefix(self) -> _Replay:
        """The replay of the steps before ``middle_step`` alone (same calls, same instance state)."""
        assert self.middle is not None and self.middle_step is not None
        results = self.results[: self.middle_step]
        errors = self.tool_errors[: sum(1 for r in results if r[0])]  # in step order
        return _Replay(self.initial, self.middle, errors, results)


def _replay(
    env: _RuntimeEnvironment, steps: Sequence[ToolCallStep], snapshot_before: int | None = None
) -> _Replay:
    inst = env.instance()
    try:
        initial = inst.snapshot()
        errors: list[str] = []
        results: list[tuple[bool, str | None, Any]] = []
        middle: bytes | None = None
        for i, step in enumerate(steps):
            if i == snapshot_before:
                middle = inst.snapshot()
            result = inst.call_tool(step.tool, dict(step.arguments))
            results.append((result.is_error, result.error_type, result.content))
            if result.is_error:
                content = (
                    result.content
                    if isinstance(result.content, str)
                    else json.dumps(result.content, default=str)
                )
                errors.append(
                    f"step {i} {step.tool}: {result.error_type or 'error'}: {content[:300]}"
                )
        return _Replay(initial, inst.snapshot(), errors, results, middle, snapshot_before)
    finally:
        inst.close()


def _without_last_write(
    steps: Sequence[ToolCallStep], write_tools: set[str]
) -> list[ToolCallStep] | None:
    for i in range(len(steps) - 1, -1, -1):
        if steps[i].tool in write_tools:
            return [*steps[:i], *steps[i + 1 :]]
    return None


def _check(
    runner: VerifierRunner,
    module: ModuleType,
    task: Task,
    kind: str,
    description: str,
    replay: _Replay,
    final_answer: str | None,
    expected_complete: bool,
) -> TrajectoryCheck:
    outcome = runner(module, task.verifier or "", replay.initial, replay.final, final_answer)
    return TrajectoryCheck(
        kind=kind,
        description=description,
        tool_errors=replay.tool_errors,
        complete=outcome.complete,
        expected_complete=expected_complete,
        verifier_error=outcome.error,
        evidence=outcome.evidence,
    )


def validate_task(
    env_id: str,
    env: _RuntimeEnvironment,
    module: ModuleType,
    task: Task,
    run_verifier: VerifierRunner = run_native_verifier,
) -> TaskValidation:
    """Validate one task against a loaded environment and its verifier module."""
    return _validate_task(env_id, env, module, task, run_verifier)[0]


def _validate_task(
    env_id: str,
    env: _RuntimeEnvironment,
    module: ModuleType,
    task: Task,
    run_verifier: VerifierRunner,
    second_replay: bool = False,
) -> tuple[TaskValidation, _Replay, _Replay | None]:
    """:func:`validate_task`, also returning the reference replay and, with ``second_replay``,
    a second replay of the whole reference solution on another fresh instance (for the leak
    check) when it comes almost free: when the last write is the last step, the dropped-write
    trajectory is that replay's prefix, snapshotted before its last step."""
    steps = task.reference_solution or []
    problems: list[str] = []
    if not task.verifier:
        problems.append("task names no verifier")
    if task.reference_solution is None:
        problems.append("task has no reference_solution")
    expected_bucket = complexity_for_calls(len(steps))
    complexity_ok = expected_bucket == task.complexity
    if not complexity_ok:
        problems.append(
            f"complexity is {task.complexity.value} but the reference solution has {len(steps)} "
            f"calls ({expected_bucket.value})"
        )
    checks: list[TrajectoryCheck] = []

    # (a) the untouched initial state is not already complete
    untouched = _replay(env, [])
    initial = _check(
        run_verifier, module, task, "initial", "untouched initial database", untouched, None, False
    )
    checks.append(initial)

    # (b) the reference solution solves it
    ref = _replay(env, steps)
    reference = _check(
        run_verifier,
        module,
        task,
        "reference",
        "reference solution",
        ref,
        task.reference_answer,
        True,
    )
    checks.append(reference)
    if ref.tool_errors:
        problems.append(f"reference solution hit tool errors: {ref.tool_errors}")

    # (c) plausible wrong trajectories are rejected
    wrong: list[TrajectoryCheck] = []
    writes = [s for s in steps if s.tool in env.write_tools]
    dropped = _without_last_write(steps, env.write_tools)
    second: _Replay | None = None
    if dropped is not None:
        if second_replay and steps[-1].tool in env.write_tools:
            second = _replay(env, steps, snapshot_before=len(steps) - 1)
            dropped_replay = second.prefix()
        else:
            dropped_replay = _replay(env, dropped)
        wrong.append(
            _check(
                run_verifier,
                module,
                task,
                "dropped_last_write",
                f"reference solution without its last write ({writes[-1].tool})",
                dropped_replay,
                task.reference_answer,
                False,
            )
        )
    answer_judged = task.expects_refusal or not writes
    if answer_judged:
        for answer in WRONG_ANSWERS:
            wrong.append(
                _check(
                    run_verifier,
                    module,
                    task,
                    "wrong_answer",
                    f"reference calls with final answer {answer!r}",
                    ref,
                    answer,
                    False,
                )
            )
    else:
        wrong.append(
            _check(
                run_verifier,
                module,
                task,
                "no_action",
                "no tool calls, final answer claims success",
                untouched,
                task.reference_answer or "Done.",
                False,
            )
        )
    for i, neg in enumerate(task.negative_examples):
        wrong.append(
            _check(
                run_verifier,
                module,
                task,
                "negative_example",
                neg.description or f"negative example {i}",
                _replay(env, neg.solution),
                neg.final_answer,
                False,
            )
        )
    checks.extend(wrong)
    for c in checks:
        if c.verifier_error:
            problems.append(f"{c.kind}: verifier error: {c.verifier_error}")

    validation = TaskValidation(
        env_id=env_id,
        task_id=task.id,
        complexity=task.complexity,
        reference_calls=len(steps),
        expects_refusal=task.expects_refusal,
        complexity_ok=complexity_ok,
        initial_not_complete=initial.ok,
        reference_complete=reference.ok and not ref.tool_errors,
        wrong_rejected=bool(wrong) and all(c.ok for c in wrong),
        problems=problems,
        checks=checks,
    )
    return validation, ref, second


# --------------------------------------------------------------------------- leak check

LEAK_PHRASE = "module-level state leaks between instances"


def _brief(result: tuple[bool, str | None, Any]) -> str:
    is_error, error_type, content = result
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"error {error_type or 'error'}: {text}" if is_error else text


def _difference(steps: Sequence[ToolCallStep], first: _Replay, second: _Replay) -> str | None:
    """How a replay of the same calls on a second fresh instance differs from the first, or None."""
    for i, (a, b) in enumerate(zip(first.results, second.results, strict=False)):
        if a != b:
            return f"step {i} ({steps[i].tool}) returned {_brief(b)!r} instead of {_brief(a)!r}"
    if first.final != second.final:
        return "the database it left differs"
    return None


class _LeakCheck:
    """Catch state the app keeps outside the database, which every in-process instance shares.

    Instances of one environment share the imported ``app.py``: a global dict,
    list or counter a tool writes through one instance is seen by all others.
    Around each task this takes a fingerprint of the app module's data
    (:func:`awm_envs.leakcheck.module_state`), and after the reference
    solution ran once it is replayed on a second, fresh instance: the tool
    results and the final database must equal those of the first replay, as
    they would in a fresh process. That second replay usually costs one call:
    it doubles as the dropped-last-write trajectory (see :func:`_validate_task`).
    """

    def __init__(
        self, env: _RuntimeEnvironment, run_verifier: VerifierRunner, verifiers: ModuleType
    ) -> None:
        self.env = env
        self.run_verifier = run_verifier
        self.verifiers = verifiers
        self.state = self._state()
        self.reported: set[str] = set()
        self.problems: list[str] = []
        self.unexplained: list[tuple[str, str]] = []  # (task id, difference) with no name found

    def _state(self) -> dict[str, Any] | None:
        if self.env.module is None:
            return None
        try:
            return module_state(self.env.module)
        except Exception:  # an object that cannot be walked: the replay comparison still runs
            return None

    def after_task(
        self, task: Task, validation: TaskValidation, ref: _Replay, second: _Replay | None
    ) -> None:
        steps = task.reference_solution or []
        detail = None
        if steps:
            if second is None:
                second = _replay(self.env, steps)
            detail = _difference(steps, ref, second)
            if detail is not None and task.verifier:
                detail += self._verdict_change(task, validation, second)
        state = self._state()
        changed = (
            changed_names(self.state, state) if self.state is not None and state is not None else []
        )
        self.state = state
        new = [n for n in changed if n not in self.reported]
        if new:
            self.reported.update(new)
            message = f"app.py: {LEAK_PHRASE}: {', '.join(new)} changed after task {task.id!r}"
            if detail is not None:
                message += f"; replayed on a second fresh instance, {detail}"
            self.problems.append(message)
        elif detail is not None and not changed:
            self.unexplained.append((task.id, detail))

    def _verdict_change(self, task: Task, validation: TaskValidation, second: _Replay) -> str:
        first = next((c for c in validation.checks if c.kind == "reference"), None)
        if first is None:
            return ""
        outcome = self.run_verifier(
            self.verifiers, task.verifier or "", second.initial, second.final, task.reference_answer
        )
        if outcome.error is not None or outcome.complete == first.complete:
            return ""
        return f", and the verifier then says {'complete' if outcome.complete else 'not complete'}"

    def report(self) -> list[str]:
        problems = list(self.problems)
        if self.unexplained:
            task_id, detail = self.unexplained[0]
            more = len(self.unexplained) - 1
            problems.append(
                f"app.py: {LEAK_PHRASE}: task {task_id!r}'s reference solution replayed on a "
                f"second fresh instance: {detail}"
                + (f" (and {more} more task(s) like it)" if more else "")
                + "; keep state in the database, not in globals, class attributes or caches "
                "(or make the tool deterministic: no random or uuid values)"
            )
        return problems


def in_catalog(env_dir: Path, catalog: Path = CATALOG_DIR) -> bool:
    """Whether ``env_dir`` is one of the shipped (hand-written, trusted) catalog bundles."""
    return env_dir.resolve().is_relative_to(catalog.resolve())


def _runner_for(
    env_dir: Path, run_verifier: VerifierRunner, sandbox: bool | None
) -> tuple[VerifierRunner, bool]:
    """The runner to use and whether this call owns it (and must close it)."""
    if run_verifier is not run_native_verifier or sandbox is False:
        return run_verifier, False
    if sandbox is None and in_catalog(env_dir):
        return run_verifier, False
    runner = SandboxedVerifierRunner()  # sandboxed, always: there is no in-process fallback
    return runner, True


def validate_environment(
    env: str | Path,
    *,
    task_ids: Iterable[str] | None = None,
    run_verifier: VerifierRunner = run_native_verifier,
    extra: list[Path] | None = None,
    sandbox: bool | None = None,
    check_leaks: bool = True,
) -> EnvValidation:
    """Validate every task (or the named ones) of one environment bundle or catalog id.

    ``sandbox`` None runs the verifiers of bundles outside the shipped catalog
    in the verifier sandbox; True runs every bundle's there; False runs them
    here (only for bundles you trust).
    ``check_leaks`` also fails an app whose tools keep state outside the
    database, shared by every instance in a process (see :class:`_LeakCheck`);
    the problem says "module-level state leaks between instances".
    """
    env_dir = resolve_env_dir(env, extra=extra)
    runner, owned = _runner_for(env_dir, run_verifier, sandbox)
    try:
        return _validate_environment(env_dir, task_ids, runner, check_leaks)
    finally:
        if owned:
            runner.close()  # type: ignore[attr-defined]


def _validate_environment(
    env_dir: Path,
    task_ids: Iterable[str] | None,
    run_verifier: VerifierRunner,
    check_leaks: bool = True,
) -> EnvValidation:
    result = EnvValidation(env_id=env_dir.name, path=str(env_dir))
    try:
        manifest = EnvironmentManifest.model_validate_json((env_dir / "manifest.json").read_bytes())
        result.env_id = manifest.id
        environment = _open_environment(env_dir)
        tasks = environment.tasks
        if getattr(run_verifier, "needs_source", False):
            module = load_verifier_source(env_dir)  # run only inside the sandbox
        else:
            module = load_verifiers(env_dir)
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
    leaks = _LeakCheck(environment, run_verifier, module) if check_leaks else None
    for task in tasks:
        if wanted is not None and task.id not in wanted:
            continue
        validation, ref, second = _validate_task(
            result.env_id, environment, module, task, run_verifier, second_replay=leaks is not None
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
    run_verifier: VerifierRunner = run_native_verifier,
    extra: list[Path] | None = None,
    sandbox: bool | None = None,
) -> list[EnvValidation]:
    """Validate the named environments, or the whole catalog when none are named.

    Each outcome is also recorded per bundle content, for ``awm envs list``.
    ``sandbox`` is passed to :func:`validate_environment`.
    """
    from awm_envs.validation_record import save_record

    ids = list(env_ids) if env_ids else catalog_env_ids()
    results = []
    for e in ids:
        result = validate_environment(e, run_verifier=run_verifier, extra=extra, sandbox=sandbox)
        if not result.problems or result.tasks:
            save_record(
                result.env_id,
                Path(result.path),
                proven=sum(t.passed for t in result.tasks),
                tasks=len(result.tasks),
                passed=result.passed,
            )
        results.append(result)
    return results
