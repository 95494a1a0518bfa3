"""Run code written for the official AWM release inside the awm runtime (earlier imports).

Bundles imported by earlier awm versions import this module from their app.py; a
current import writes the same session shim into app.py itself
(:data:`awm_envs.awm1k.repair.SESSION_SHIM`), so its bundle imports no awm code, and
``export-awm`` removes either. Two shims make official code fit the awm contract:

* the official code opens ``SessionLocal()`` inside every endpoint instead of
  using a dependency; :func:`install_session_shim` makes ``SessionLocal()``
  return the calling instance's session (the runtime's override of
  ``get_db``), so instances stay isolated and rejected calls roll back;
* the official verifiers take database *paths*; :func:`run_official_verifier`
  adapts them to awm's native ``(initial, final, final_answer)`` signature.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI


class _BorrowedSession:
    """A session the endpoint may ``close()`` without ending the instance's transaction."""

    def __init__(self, session: Any) -> None:
        object.__setattr__(self, "_session", session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._session, name, value)

    def close(self) -> None:
        """The runtime owns the session's lifetime; closing here would drop its transaction."""

    def __enter__(self) -> _BorrowedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def install_session_shim(
    app: FastAPI,
    session_factory: Callable[[], Any] | None,
    get_db: Callable[..., Any] | None = None,
) -> tuple[Callable[..., Iterator[Any]], Callable[[], Any]]:
    """Return ``(get_db, SessionLocal)`` for an imported app.

    ``get_db`` is the app's own dependency when it has one (routes captured that
    function object at decoration time, so it must stay the one the runtime
    overrides), else a new one over ``session_factory``. ``SessionLocal()``
    returns the runtime's per-instance session while a call is running, and a
    session of the original factory when the app runs on its own.
    """

    if get_db is None:

        def get_db() -> Iterator[Any]:
            if session_factory is None:
                raise RuntimeError("this app defines neither get_db nor SessionLocal")
            db = session_factory()
            try:
                yield db
            finally:
                db.close()

    dependency = get_db

    def session_local() -> Any:
        override = app.dependency_overrides.get(dependency)
        if override is not None:
            return _BorrowedSession(override())
        if session_factory is None:
            raise RuntimeError("SessionLocal is only available under the awm runtime")
        return session_factory()

    return dependency, session_local


def _to_file(conn: sqlite3.Connection, path: Path) -> str:
    path.write_bytes(conn.serialize())
    path.chmod(0o444)
    return str(path)


def run_official_verifier(
    source: str,
    mode: str,
    initial: sqlite3.Connection,
    final: sqlite3.Connection,
    final_answer: str | None,
) -> dict[str, Any]:
    """Call an official verifier (``code`` or ``sql`` mode) with awm's native arguments.

    ``code`` mode (``verify_task_completion``) decides: ``{"result": "complete"}``
    becomes ``complete: True``. ``sql`` mode (``verify_task``) only extracts
    evidence: it reports ``complete: False`` with ``evidence["undecided"] = True``,
    so code alone never passes it and the code+llm judge decides from the evidence.
    """
    namespace: dict[str, Any] = {"__name__": "awm_official_verifier"}
    exec(compile(source, "<official verifier>", "exec"), namespace)
    with tempfile.TemporaryDirectory(prefix="awm-verify-") as tmp:
        before = _to_file(initial, Path(tmp) / "initial.db")
        after = _to_file(final, Path(tmp) / "final.db")
        if mode == "code":
            out = namespace["verify_task_completion"](before, after, final_answer)
            result = out.get("result") if isinstance(out, dict) else None
            return {"complete": result == "complete", "evidence": {"official": out}}
        evidence = namespace["verify_task"](before, after)
        return {"complete": False, "evidence": {"official": evidence, "undecided": True}}
