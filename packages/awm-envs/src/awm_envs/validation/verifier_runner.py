"""Run a bundle's native verifiers in-process, on read-only copies of two snapshots.

This is the trusted path, for bundles we wrote ourselves (the catalog).
Untrusted verifier code (a synthesized or imported bundle) goes through the
sandbox instead (:mod:`awm_envs.sandbox`): :class:`SandboxedVerifierRunner`
takes the same arguments as :func:`run_native_verifier` and never falls back
to this process. With awm-verify installed it uses awm-verify's
``VerifierPool`` (every verifier signature the official release uses);
without it, this package's own sandbox runs native-signature verifiers.
"""

from __future__ import annotations

import inspect
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from awm_core.modules import content_name, import_file

__all__ = [
    "SandboxedVerifierRunner",
    "VerifierLoadError",
    "VerifierOutcome",
    "VerifierSandboxUnavailable",
    "load_verifier_source",
    "load_verifiers",
    "readonly_connection",
    "run_native_verifier",
]


class VerifierLoadError(RuntimeError):
    """A bundle's verifiers.py is missing, does not import, or lacks a named function."""


class VerifierSandboxUnavailable(RuntimeError):
    """A sandbox was asked for, but no installed plugin provides one (install awm-verify)."""


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
    name = content_name("_awm_bundle_verifiers", path.read_bytes())
    try:  # afresh each time: one validation's module state never reaches the next
        return import_file(path, name, cache=False)
    except Exception as exc:
        raise VerifierLoadError(f"{path} failed to import: {type(exc).__name__}: {exc}") from exc


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


SOURCE_ATTRIBUTE = "__awm_verifier_source__"
VERIFIER_JOB = "awm_envs.sandbox.verifier_job:run"


def load_verifier_source(bundle_dir: str | Path) -> ModuleType:
    """``<bundle_dir>/verifiers.py`` as an *unexecuted* module carrying its source.

    For :class:`SandboxedVerifierRunner`: untrusted code must not run at import
    in this process, so the module only holds the text the sandbox will run.
    """
    path = Path(bundle_dir) / "verifiers.py"
    if not path.is_file():
        raise VerifierLoadError(f"{path} does not exist; every task's verifier lives there.")
    module = ModuleType(f"_awm_bundle_verifier_source_{abs(hash(str(path.resolve())))}")
    module.__file__ = str(path)
    setattr(module, SOURCE_ATTRIBUTE, path.read_text(encoding="utf-8"))
    return module


class _NativeSandbox:
    """awm-envs' own verifier sandbox, for native ``(initial, final, final_answer)`` verifiers.

    Inside a sandbox already (a synthesis check validating a bundle), each
    verification is a fork of this process instead: same policy, same limits,
    a process of its own, and no sandbox nested in a sandbox.
    """

    def __init__(self, cpu_s: float | None, wall_s: float | None, size: int) -> None:
        from awm_envs.sandbox import JobPool, Limits
        from awm_envs.sandbox.boot import inside_sandbox

        self.limits = Limits().with_(cpu_s=cpu_s, wall_s=wall_s)
        self._jobs: Any = None
        if not inside_sandbox():
            self._jobs = JobPool(VERIFIER_JOB, size=size, limits=self.limits)

    def _run(self, header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
        if self._jobs is not None:
            reply: dict[str, Any] = self._jobs.run(header, blobs)[0]
            return reply
        from awm_envs.sandbox import verifier_job
        from awm_envs.sandbox.forkhost import run_in_fork

        verifier_job.sandbox_prepare_once()
        reply, _ = run_in_fork(verifier_job.run, header, blobs, self.limits.to_json())
        return reply

    def run(
        self, source: str, *, initial: bytes, final: bytes, function: str, final_answer: str | None
    ) -> VerifierOutcome:
        header = {
            "source": source,
            "function": function,
            "style": "connections",
            "paths": [],
            "pass_final_answer": True,
            "final_answer": final_answer,
            "cpu_limit_s": self.limits.cpu_s,
        }
        reply = self._run(header, [initial, final])
        if reply.get("status") != "ok":
            kind, message = reply.get("kind", "crash"), reply.get("message", "unknown failure")
            return VerifierOutcome(
                False, error=f"{function} failed in the sandbox ({kind}): {message}"
            )
        result = json.loads(reply["result_json"])
        if not isinstance(result, dict) or not isinstance(result.get("complete"), bool):
            return VerifierOutcome(
                False,
                error=f"{function} returned {result!r}; expected a dict with a boolean 'complete'",
            )
        evidence = result.get("evidence", {})
        return VerifierOutcome(
            result["complete"], evidence if isinstance(evidence, dict) else {"value": evidence}
        )

    def close(self) -> None:
        if self._jobs is not None:
            self._jobs.close()


class SandboxedVerifierRunner:
    """Runs untrusted verifiers in the sandbox, called like :func:`run_native_verifier`.

    The module must come from :func:`load_verifier_source`. Every failure of
    the verifier (an exception, a forbidden import or system call, the CPU,
    wall-clock or memory limit) comes back as ``complete=False`` with
    ``error`` set, never as an exception or a hang in this process. There is
    no in-process fallback: if the sandbox cannot start, this raises.
    """

    needs_source = True

    def __init__(
        self,
        pool: Any = None,
        *,
        cpu_s: float | None = None,
        wall_s: float | None = None,
        size: int = 1,
    ) -> None:
        if pool is None:
            from awm_envs.sandbox.boot import inside_sandbox

            try:  # a declared optional dependency, imported by name: not found by convention
                if inside_sandbox():
                    raise ImportError("inside a sandbox: fork per verification instead")
                from awm_verify import SandboxLimits, VerifierPool
            except ImportError:
                pool = _NativeSandbox(cpu_s, wall_s, size)
            else:
                defaults = SandboxLimits()
                limits = SandboxLimits(
                    cpu_s=defaults.cpu_s if cpu_s is None else cpu_s,
                    wall_s=defaults.wall_s if wall_s is None else wall_s,
                )
                pool = VerifierPool(size=size, limits=limits)
        self._pool = pool

    @classmethod
    def discover(
        cls, *, cpu_s: float | None = None, wall_s: float | None = None, size: int = 1
    ) -> SandboxedVerifierRunner:
        """A runner on the best sandbox installed (kept for callers of the old plugin lookup)."""
        return cls(cpu_s=cpu_s, wall_s=wall_s, size=size)

    def __call__(
        self,
        module: ModuleType,
        function: str,
        initial: bytes,
        final: bytes,
        final_answer: str | None,
    ) -> VerifierOutcome:
        source = getattr(module, SOURCE_ATTRIBUTE, None)
        if source is None:
            raise TypeError("SandboxedVerifierRunner needs a module from load_verifier_source()")
        result = self._pool.run(
            source, initial=initial, final=final, function=function, final_answer=final_answer
        )
        if isinstance(result, VerifierOutcome):
            return result
        if result.error is not None:
            kind = getattr(result.error.kind, "value", result.error.kind)
            return VerifierOutcome(
                False, error=f"{function} failed in the sandbox ({kind}): {result.error.message}"
            )
        if result.complete is None:
            return VerifierOutcome(
                False,
                dict(result.evidence),
                error=f"{function} returned evidence but no verdict ('complete')",
            )
        return VerifierOutcome(bool(result.complete), dict(result.evidence))

    def close(self) -> None:
        """Stop the sandbox's processes."""
        self._pool.close()
