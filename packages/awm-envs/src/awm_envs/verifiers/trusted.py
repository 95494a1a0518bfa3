"""Run a bundle's native verifiers in-process, on read-only copies of two snapshots.

This is the trusted path, for bundles we wrote ourselves (the catalog).
Untrusted verifier code (a synthesized or imported bundle) runs in the sandbox
instead (:class:`~awm_envs.verifiers.pool.VerifierPool`), which returns the
same :class:`~awm_core.models.verification.VerifierResult` and never falls back
to this process.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from pathlib import Path
from types import ModuleType

from awm_core.models.verification import VerifierError, VerifierErrorKind, VerifierResult
from awm_core.modules import content_name, import_file

__all__ = [
    "VerifierLoadError",
    "load_verifiers",
    "missing_verifiers",
    "readonly_connection",
    "run_trusted",
]


class VerifierLoadError(RuntimeError):
    """A bundle's verifiers.py is missing, does not import, or lacks a named function."""


def readonly_connection(snapshot: bytes) -> sqlite3.Connection:
    """A private in-memory copy of a database snapshot that refuses every write."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(snapshot)
    conn.execute("PRAGMA query_only = ON")
    return conn


def missing_verifiers(bundle_dir: str | Path) -> VerifierLoadError:
    """The error for a bundle without ``verifiers.py``."""
    path = Path(bundle_dir) / "verifiers.py"
    return VerifierLoadError(f"{path} does not exist; every task's verifier lives there.")


def load_verifiers(bundle_dir: str | Path) -> ModuleType:
    """Import ``<bundle_dir>/verifiers.py`` under a private module name."""
    path = Path(bundle_dir) / "verifiers.py"
    if not path.is_file():
        raise missing_verifiers(bundle_dir)
    name = content_name("_awm_bundle_verifiers", path.read_bytes())
    try:  # afresh each time: one validation's module state never reaches the next
        return import_file(path, name, cache=False)
    except Exception as exc:
        raise VerifierLoadError(f"{path} failed to import: {type(exc).__name__}: {exc}") from exc


def _failed(function: str, kind: VerifierErrorKind, message: str) -> VerifierResult:
    return VerifierResult(
        function=function, signature="native", error=VerifierError(kind=kind, message=message)
    )


def run_trusted(
    module: ModuleType,
    function: str,
    initial: bytes,
    final: bytes,
    final_answer: str | None,
) -> VerifierResult:
    """Call ``function(initial, final, final_answer)`` from ``module`` on read-only snapshots.

    Never raises for problems in the verifier itself: a missing function, an
    exception or a malformed return value come back in ``error`` with no
    verdict, so a broken verifier can never count as a pass.
    """
    fn = getattr(module, function, None)
    if not callable(fn):
        available = sorted(
            n for n, v in vars(module).items() if callable(v) and n.startswith("verify")
        )
        message = f"no verifier named {function!r}; defined: {available}"
        return _failed(function, VerifierErrorKind.INVALID, message)
    params = list(inspect.signature(fn).parameters)
    if len(params) < 3:
        message = (
            f"{function} takes {params}; the native signature is (initial, final, final_answer)"
        )
        return _failed(function, VerifierErrorKind.INVALID, message)
    before, after = readonly_connection(initial), readonly_connection(final)
    try:
        result = fn(before, after, final_answer)
    except Exception as exc:
        message = f"{function} raised {type(exc).__name__}: {exc}"
        return _failed(function, VerifierErrorKind.EXCEPTION, message)
    finally:
        before.close()
        after.close()
    if not isinstance(result, dict) or not isinstance(result.get("complete"), bool):
        message = f"{function} returned {result!r}; expected a dict with a boolean 'complete'"
        return _failed(function, VerifierErrorKind.BAD_OUTPUT, message)
    evidence = result.get("evidence", {})
    try:
        json.dumps(evidence, default=str)
    except (TypeError, ValueError) as exc:
        message = f"{function}'s evidence is not JSON-serialisable: {exc}"
        return _failed(function, VerifierErrorKind.BAD_OUTPUT, message)
    return VerifierResult(
        function=function,
        signature="native",
        complete=result["complete"],
        evidence=evidence if isinstance(evidence, dict) else {"value": evidence},
    )
