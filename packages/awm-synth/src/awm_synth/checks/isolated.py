"""Work that runs inside the sandbox, one fresh fork per check (see :mod:`awm_synth.checks.sandbox`).

Each function here executes generated code, so it only ever runs as the job
of an :class:`awm_envs.sandbox.JobPool` template: under bubblewrap, in a child
forked for that one check from a template that already imported FastAPI,
SQLAlchemy and the awm-envs runtime (milliseconds, not a second of imports),
with the check's wall clock and memory limit. Arguments and results are JSON:
nothing from generated code (an exception object, a model instance) can reach
the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import awm_synth.checks._warm  # noqa: F401 - loads one catalog app, so forks start past lazy set-up

# Imported in the template: children then fork with these already in memory (the name is
# a lazy export of awm_envs, so this import loads the runtime's validator module now).
from awm_envs import validate_environment
from awm_synth.checks.apprunner import AppHarness, AppLoadError

Call = tuple[str, dict[str, Any]]


def bundle_problems(path: str) -> list[str]:
    """The awm-envs runtime's verdict on a staged bundle: load it, then validate every task.

    Like :func:`awm_synth.store.bundle.runtime_problems`, but loads the bundle once:
    the validator's own load reports every loading problem too.
    """
    # This child already has limits; the verifiers also get the verifier sandbox's policy
    # (no files, processes or sockets), as they will when rollouts are judged.
    result = validate_environment(Path(path), sandbox=True)
    problems = list(result.problems)
    for task in result.tasks:
        if not task.passed:
            problems.append(
                f"task {task.task_id}: " + ("; ".join(task.problems) or "failed validation")
            )
    return problems


def crash_locations(source: str, template: bytes, sequences: list[list[Call]]) -> list[str | None]:
    """Replay each call sequence on a fresh database; the last call's crash with its app.py line.

    The runtime reports a crashing tool as ``TypeError: ...``; this replays the
    same calls through FastAPI's own request handling with exceptions raised,
    so the feedback can name the line of app.py, as a traceback would.
    """
    try:
        harness = AppHarness(source, template).start()
    except AppLoadError:
        return [None] * len(sequences)
    found: list[str | None] = []
    try:
        for calls in sequences:
            harness.reset()
            crash = None
            for tool, arguments in calls:
                crash = harness.call(tool, arguments).crash
            found.append(crash)
    finally:
        harness.close()
    return found


def job(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """The sandbox job: ``header['fn']`` with ``header['args']`` (and the blobs, for crash replays)."""
    fn = header["fn"]
    try:
        if fn == "bundle_problems":
            value: Any = bundle_problems(*header["args"])
        elif fn == "crash_locations":
            source, sequences = header["args"]
            value = crash_locations(
                source, blobs[0], [[tuple(c) for c in seq] for seq in sequences]
            )
        else:
            return {"status": "error", "kind": "invalid", "message": f"unknown check {fn!r}"}
    except MemoryError:
        return {
            "status": "error",
            "kind": "memory",
            "message": "the check ran out of memory (its memory limit)",
        }
    except BaseException as exc:  # noqa: BLE001 - generated code may raise SystemExit
        return {"status": "error", "kind": "exception", "message": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "value": value}


def sandbox_warmup() -> None:
    """Each forked child, before its check: nothing (the template warmed up at import)."""
