"""Run a bundle's native verifiers in-process, on read-only copies of two snapshots.

This is the trusted path, for bundles we wrote ourselves (the catalog) and for
``awm envs validate``. Untrusted, generated verifier code goes through
awm-verify's sandbox instead; :func:`run_native_verifier` is deliberately small
so a caller can swap it for the sandboxed runner with the same arguments.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "VerifierLoadError",
    "VerifierOutcome",
    "load_verifiers",
    "readonly_connection",
    "run_native_verifier",
]


class VerifierLoadError(RuntimeError):
    """A bundle's verifiers.py is missing, does not import, or lacks a named function."""


@dataclass(frozen=True)
class VerifierOutcome:
    """What one verifier call said: ``complete``, its evidence, or the error it raised."""

    complete: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def readonly_connection(snapshot: bytes) -> sqlite3.Connection:
    """A private in-memory copy of a database snapshot that refuses every write."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(snapshot)
    conn.execute("PRAGMA query_only = ON")
    return conn


def load_verifiers(bundle_dir: str | Path) -> ModuleType:
    """Import ``<bundle_dir>/verifiers.py`` under a private module name."""
    path = Path(bundle_dir) / "verifiers.py"
    if not path.is_file():
        raise VerifierLoadError(f"{path} does not exist; every task's verifier lives there.")
    name = f"_awm_bundle_verifiers_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - only for odd file systems
        raise VerifierLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise VerifierLoadError(f"{path} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


def run_native_verifier(
    module: ModuleType,
    function: str,
    initial: bytes,
    final: bytes,
    final_answer: str | None,
) -> VerifierOutcome:
    """Call ``function(initial, final, final_answer)`` from ``module`` on read-only snapshots.

    Never raises for problems in the verifier itself: a missing function, an
    exception or a malformed return value come back as ``complete=False`` with
    ``error`` set, so a broken verifier can never count as a pass.
    """
    fn = getattr(module, function, None)
    if not callable(fn):
        available = sorted(
            n for n, v in vars(module).items() if callable(v) and n.startswith("verify")
        )
        return VerifierOutcome(False, error=f"no verifier named {function!r}; defined: {available}")
    params = list(inspect.signature(fn).parameters)
    if len(params) < 3:
        return VerifierOutcome(
            False,
            error=f"{function} takes {params}; the native signature is (initial, final, final_answer)",
        )
    before, after = readonly_connection(initial), readonly_connection(final)
    try:
        result = fn(before, after, final_answer)
    except Exception as exc:
        return VerifierOutcome(False, error=f"{function} raised {type(exc).__name__}: {exc}")
    finally:
        before.close()
        after.close()
    if not isinstance(result, dict) or not isinstance(result.get("complete"), bool):
        return VerifierOutcome(
            False,
            error=f"{function} returned {result!r}; expected a dict with a boolean 'complete'",
        )
    evidence = result.get("evidence", {})
    try:
        json.dumps(evidence, default=str)
    except (TypeError, ValueError) as exc:
        return VerifierOutcome(
            False, error=f"{function}'s evidence is not JSON-serialisable: {exc}"
        )
    return VerifierOutcome(
        result["complete"], evidence if isinstance(evidence, dict) else {"value": evidence}
    )
