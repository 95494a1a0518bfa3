"""Load a bundle in a throwaway sandboxed fork first: a clear error instead of a silent exit or a hang.

Commands that look at a bundle (``awm envs validate``, ``show``, ``call``)
would import its ``app.py`` in this process. An
``app.py`` that calls ``os._exit`` at import would end the command silently
with the app's exit status, and one that loops at import would hang it. So
before any of that, a bundle that is not one of the shipped (hand-written,
trusted) catalog bundles is loaded once in a fork of a pre-imported sandbox
template (a job of :mod:`awm_envs.sandbox.forkhost`), under
:data:`~awm_envs.pool.workers.IMPORT_TIMEOUT_ENV` (default 60 s): a crash, a hang
or an ordinary load error comes back as a :class:`BundleError` naming
``app.py`` and what happened. :func:`describe_bundle` also returns what the
load found (manifest, tools, tasks, template), so ``awm envs show`` needs no
import here at all.
"""

from __future__ import annotations

import shutil
import tempfile
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
    PRELOAD,
    WORKER_PROCESSES,
    import_timeout_default,
)
from awm_envs.sandbox.forkserver import SandboxStartError
from awm_envs.sandbox.jobpool import JobPool
from awm_envs.sandbox.limits import Limits

APP_PY = "app.py"
DESCRIBE_JOB = "awm_envs.pool.worker_main:describe_job"


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


_TEMPLATE_ROOT = "/tmp/awm-preflight"  # inside the template's private /tmp, emptied per job
_templates: JobPool | None = None
_templates_lock = threading.Lock()


def _template_pool() -> JobPool:
    """This process's pre-imported sandbox template for import checks, started on first use.

    Why one per process: a validate run checks hundreds of bundles, and a cold sandbox
    interpreter importing FastAPI, SQLAlchemy and pydantic for each cost 1 to 4 s; a fork
    of this template costs milliseconds plus the app's own import. Closed at exit.
    """
    global _templates
    with _templates_lock:
        if _templates is None or _templates.closed:
            import atexit

            _templates = JobPool(DESCRIBE_JOB, size=1, preload=PRELOAD)
            atexit.register(_templates.close)
        return _templates


def describe_bundle(
    path: str | Path,
    *,
    import_timeout: float | None = None,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
) -> BundleDescription:
    """Load the bundle at ``path`` in a fresh sandboxed fork; what it holds, or a :class:`BundleError`.

    The fork comes from a template with the web and database libraries imported
    (:func:`_template_pool`) and exits after this one bundle, taking whatever the
    import did with it. An ``app.py`` that ends it (``os._exit``, a segfault, the
    memory limit) or does not finish importing within ``import_timeout`` seconds
    (wall clock and CPU) is a problem of ``app.py`` saying which. Raises
    :class:`PreflightUnavailable` if no sandbox can be started at all.
    """
    root = Path(path).resolve()
    timeout = import_timeout if import_timeout is not None else import_timeout_default()
    pool = _template_pool()
    # without bubblewrap the fork shares the host's /tmp: a folder of its own, removed here
    scratch = None if pool.isolation.isolated else tempfile.mkdtemp(prefix="awm-preflight-")
    bundle = ShippedBundle.pack(root)
    limits = Limits(
        cpu_s=timeout,
        wall_s=timeout,
        memory_bytes=memory_limit or 0,
        open_files=1024,
        processes=WORKER_PROCESSES,
    )
    header = {
        "root": scratch or _TEMPLATE_ROOT,
        "key": bundle.key,
        "host_path": str(root),
        "names": bundle.names,
    }
    try:
        reply_header, blobs = pool.run(header, [bundle.data], limits)
    except SandboxStartError as exc:
        raise PreflightUnavailable(f"the sandbox that loads bundles did not start: {exc}") from None
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if reply_header.get("status") == "error":  # the fork gave no reply: how it ended
        kind, message = reply_header.get("kind"), str(reply_header.get("message", ""))
        if kind == "timeout":
            raise _problem(
                root,
                f"did not finish importing within {timeout:g} s (the import limit, "
                f"{IMPORT_TIMEOUT_ENV}); an infinite loop or a blocking call at import time? "
                "The sandbox process importing it was stopped",
            )
        if kind == "memory":
            raise _problem(root, f"importing it went past the memory limit: {message}")
        raise _problem(root, f"importing it ended the sandbox process that loaded it: {message}")
    if not reply_header.get("ok"):
        problems = reply_header.get("problems")
        if isinstance(problems, list) and problems:
            raise BundleError(root, [BundleProblem(*map(str, p)) for p in problems])
        raise _problem(root, str(reply_header.get("error", "the bundle did not load")))
    info: dict[str, Any] = reply_header.get("value") or {}
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
