"""Work that runs inside a short-lived, resource-limited child process (see :mod:`awm_synth.sandbox`).

Each function here executes generated code, so it is only ever called in a
child started by :func:`awm_synth.sandbox.run_isolated`: a hang is killed at
the parent's deadline, a crash or the memory limit ends only the child. The
module is preloaded by the fork server, so a child starts with FastAPI,
SQLAlchemy and the awm-envs runtime already imported (milliseconds, not a
second of imports per check).

Arguments and results are plain lists, tuples and strings: cheap to pickle,
and nothing from generated code (an exception object, a model instance) can
reach the parent.
"""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

# Imported for the fork server's preload: children then fork with these already in memory.
import awm_envs.validate  # noqa: F401
from awm_synth.apprunner import AppHarness, AppLoadError

Call = tuple[str, dict[str, Any]]

# Environment variables a child keeps: generated code must not see API keys or tokens.
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


def bundle_problems(path: str) -> list[str]:
    """The awm-envs runtime's verdict on a staged bundle: load it, then validate every task.

    Like :func:`awm_synth.bundle.runtime_problems`, but loads the bundle once:
    the validator's own load reports every loading problem too.
    """
    from awm_envs.validate import validate_environment

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


def _scrub_environment() -> None:
    for key in list(os.environ):
        if key not in _KEEP_ENV:
            del os.environ[key]


def _limit_memory(limit_bytes: int | None) -> None:
    """Cap the address space at what the child already maps plus ``limit_bytes``."""
    if not limit_bytes:
        return
    try:
        with open("/proc/self/statm") as f:
            base = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        base = 0
    resource.setrlimit(resource.RLIMIT_AS, (base + limit_bytes, resource.RLIM_INFINITY))


def child_main(
    conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...], memory_limit: int | None
) -> None:
    """Entry point of an isolated child: run ``fn(*args)`` once and send back ``(ok, value)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    _scrub_environment()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _limit_memory(memory_limit)
    try:
        reply: tuple[bool, Any] = (True, fn(*args))
    except MemoryError:
        reply = (False, "MemoryError: the check ran out of memory (its memory limit)")
    except BaseException as exc:  # noqa: BLE001 - generated code may raise SystemExit
        reply = (False, f"{type(exc).__name__}: {exc}")
    try:
        conn.send(reply)
    except Exception as exc:  # an unpicklable value: say so rather than die silently
        conn.send((False, f"the result could not be sent back: {exc}"))
    finally:
        conn.close()
