"""Load a bundle in a throwaway sandbox worker first: a clear error instead of a silent exit or a hang.

Commands that look at a bundle (``awm envs validate``, ``show``, ``call``)
would import its ``app.py`` in this process. An
``app.py`` that calls ``os._exit`` at import would end the command silently
with the app's exit status, and one that loops at import would hang it. So
before any of that, a bundle that is not one of the shipped (hand-written,
trusted) catalog bundles is loaded once in a sandbox worker, under
:data:`~awm_envs.pool.workers.IMPORT_TIMEOUT_ENV` (default 60 s): a crash, a hang
or an ordinary load error comes back as a :class:`BundleError` naming
``app.py`` and what happened. :func:`describe_bundle` also returns what the
load found (manifest, tools, tasks, template), so ``awm envs show`` needs no
import here at all.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core.models import EnvironmentManifest, Task, ToolSpec
from awm_envs.bundle.identity import Fingerprint, fingerprint
from awm_envs.bundle.sources import CATALOG_DIR
from awm_envs.errors import BundleError, BundleProblem
from awm_envs.pool.shipping import ShippedBundle
from awm_envs.pool.workers import (
    DEFAULT_MEMORY_LIMIT,
    IMPORT_TIMEOUT_ENV,
    SETUP_TIMEOUT_S,
    START_TIMEOUT_S,
    encode_request,
    import_timeout_default,
    start_worker_process,
)
from awm_envs.sandbox import wire
from awm_envs.sandbox.isolation import resolve

APP_PY = "app.py"


class PreflightUnavailable(RuntimeError):
    """The sandbox worker itself would not start: the machine's fault, not the bundle's."""


@dataclass
class BundleDescription:
    """What loading a bundle in a sandbox found (everything ``awm envs show`` prints)."""

    path: Path
    manifest: EnvironmentManifest
    tools: list[ToolSpec]
    tasks: list[Task]
    tables: list[str]
    template: bytes

    @property
    def id(self) -> str:
        return self.manifest.id


def trusted(path: str | Path) -> bool:
    """Whether ``path`` is one of the bundles shipped with awm-envs (hand-written, reviewed)."""
    return Path(path).resolve().is_relative_to(CATALOG_DIR.resolve())


def _inside_sandbox() -> bool:
    from awm_envs.sandbox.boot import inside_sandbox

    return inside_sandbox()


def _problem(path: Path, message: str) -> BundleError:
    return BundleError(path, [BundleProblem(APP_PY, "import", message)])


def describe_bundle(
    path: str | Path,
    *,
    import_timeout: float | None = None,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
) -> BundleDescription:
    """Load the bundle at ``path`` in a fresh sandbox worker; what it holds, or a :class:`BundleError`.

    An ``app.py`` that ends the worker (``os._exit``, a segfault, the memory
    limit) or does not finish importing within ``import_timeout`` seconds is
    a problem of ``app.py`` saying which. Raises :class:`PreflightUnavailable`
    if no sandbox worker can be started at all.
    """
    root = Path(path).resolve()
    timeout = import_timeout if import_timeout is not None else import_timeout_default()
    proc, host_root = start_worker_process(
        memory_limit, isolation=resolve(), name="awm-preflight", scratch_prefix="awm-preflight-"
    )
    try:
        try:
            ready = proc.recv(START_TIMEOUT_S)
        except (wire.ChannelClosed, wire.ProtocolError):
            ready = None
        if ready is None or not ready[0].get("ready"):
            raise PreflightUnavailable(
                f"the sandbox worker that loads bundles did not start (it {proc.exit_reason(0.5)})"
            )
        bundle = ShippedBundle.pack(root)
        try:
            proc.send(*encode_request("ship", (bundle.key, str(root), bundle.names, bundle.data)))
            shipped = proc.recv(SETUP_TIMEOUT_S)
            if shipped is None or not shipped[0].get("ok"):
                raise PreflightUnavailable(
                    "the sandbox worker did not accept the bundle's files: "
                    + (str(shipped[0].get("error")) if shipped else "no answer")
                )
            proc.send(*encode_request("describe", (bundle.key,)))
            reply = proc.recv(timeout)
        except (wire.ChannelClosed, wire.ProtocolError, OSError):
            raise _problem(
                root,
                f"importing it ended the sandbox process that loaded it: it {proc.exit_reason()}",
            ) from None
        if reply is None:
            raise _problem(
                root,
                f"did not finish importing within {timeout:g} s (the import limit, "
                f"{IMPORT_TIMEOUT_ENV}); an infinite loop or a blocking call at import time? "
                "The sandbox process importing it was stopped",
            )
    finally:
        proc.kill()
        if host_root is not None:
            shutil.rmtree(host_root, ignore_errors=True)
    header, blobs = reply
    if not header.get("ok"):
        problems = header.get("problems")
        if isinstance(problems, list) and problems:
            raise BundleError(root, [BundleProblem(*map(str, p)) for p in problems])
        raise _problem(root, str(header.get("error", "the bundle did not load")))
    info: dict[str, Any] = header.get("value") or {}
    return BundleDescription(
        path=root,
        manifest=EnvironmentManifest.model_validate(info["manifest"]),
        tools=[ToolSpec.model_validate(t) for t in info.get("tools", [])],
        tasks=[Task.model_validate(t) for t in info.get("tasks", [])],
        tables=[str(t) for t in info.get("tables", [])],
        template=blobs[0] if blobs else b"",
    )


_checked: set[Fingerprint] = set()
_checked_lock = threading.Lock()


def check_bundle(path: str | Path, *, import_timeout: float | None = None) -> None:
    """Raise :class:`BundleError` if loading ``path`` crashes, hangs or fails in a sandbox.

    A no-op for the shipped catalog's bundles, inside a sandbox already (a
    crash there ends only that sandbox), and for content already checked by
    this process.
    """
    if trusted(path) or _inside_sandbox():
        return
    key = fingerprint(Path(path))
    with _checked_lock:
        if key in _checked:
            return
    describe_bundle(path, import_timeout=import_timeout)
    with _checked_lock:
        _checked.add(key)


__all__ = [
    "BundleDescription",
    "PreflightUnavailable",
    "check_bundle",
    "describe_bundle",
    "trusted",
]
