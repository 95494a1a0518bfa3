"""A folder of bundles that can also open live sessions: what ``awm run --env ID`` needs.

:class:`SessionFolderSource` is an :class:`awm_core.contracts.SessionSource`:
besides ``list_ids()`` and ``path(id)`` it opens a fresh, isolated session on
an environment and lists its tasks, for a catalog id *or* a bundle folder
path. Trust follows the rest of awm-envs (docs/security.md): a shipped
catalog bundle runs in this process; any other bundle runs in one sandbox
worker, so its ``app.py`` is never imported here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_envs.bundle.sources import FolderSource, resolve_env

if TYPE_CHECKING:  # pydantic models: imported when a session is opened, not at plugin load
    from awm_core.models import Task, ToolResult, ToolSpec


class InProcessSession:
    """An :class:`~awm_envs.runtime.instance.Instance` (or a worker's) as an
    :class:`awm_core.session.EnvInstance` with ``aclose()``."""

    def __init__(self, instance: Any) -> None:
        self._instance = instance

    async def list_tools(self) -> list[ToolSpec]:
        """The environment's tools."""
        tools: list[ToolSpec] = await self._instance.list_tools()
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Run one tool (in a worker, a hang or crash is an ``environment_error`` result)."""
        result: ToolResult = await self._instance.call_tool(name, arguments)
        return result

    async def snapshot(self) -> bytes:
        """The instance's database image."""
        image: bytes = await self._instance.snapshot()
        return image

    async def aclose(self) -> None:
        """Close the instance."""
        await self._instance.close()


class WorkerSession(InProcessSession):
    """One instance in a private one-worker sandbox pool; ``aclose()`` stops both."""

    def __init__(self, pool: Any, instance: Any) -> None:
        super().__init__(instance)
        self._pool = pool

    async def aclose(self) -> None:
        """Close the instance and stop its worker."""
        await super().aclose()
        await self._pool.close()


@dataclass(frozen=True)
class SessionFolderSource(FolderSource):
    """A :class:`FolderSource` whose environments ``awm run`` can open (ids or bundle paths)."""

    def _resolve(self, env_ref: str) -> Path:
        return resolve_env(env_ref, extra=[self.root])

    def env_id(self, env_ref: str) -> str:
        """The manifest id of ``env_ref`` (what a trajectory records, even for a folder path)."""
        path = self._resolve(env_ref)
        try:
            manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
            return str(manifest.get("id") or path.name)
        except (OSError, ValueError):
            return path.name

    def tasks(self, env_id: str) -> list[Task]:
        """The tasks shipped in the bundle's ``tasks.json`` (read without importing ``app.py``)."""
        from awm_core.models import Task

        path = self._resolve(env_id)
        data = json.loads((path / "tasks.json").read_text(encoding="utf-8"))
        items = data.get("tasks", []) if isinstance(data, dict) else data
        return [Task.model_validate(t) for t in items]

    async def open_session(self, env_id: str) -> InProcessSession | WorkerSession:
        """A fresh isolated instance: in this process for the shipped catalog, else sandboxed."""
        from awm_envs.pool.preflight import trusted

        path = self._resolve(env_id)
        if trusted(path):
            from awm_envs.runtime.environment import load_environment

            return InProcessSession(load_environment(path).instance())
        from awm_envs.pool.remote import WorkerPool

        pool = WorkerPool(1)
        try:
            await pool.start()
            instance = await pool.create(path)
        except BaseException:
            await pool.close()
            raise
        return WorkerSession(pool, instance)
