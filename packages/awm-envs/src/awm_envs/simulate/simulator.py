"""The paper's "Simulator" baseline: tool results written by an LLM instead of executed.

Task- and tool-matched to a real awm environment: the agent sees the same
tools (names, descriptions, input schemas) and the same tasks; each call is
checked with the same argument checker, then answered by an LLM that is shown
the environment's database schema, the tool's spec and every call this instance
has answered so far (so its answers can stay consistent). The instance API is
the executable one (``list_tools``/``call_tool``/``snapshot``/``reset``, and a
pool with ``instance()``), so the same rollout, verification and training code
runs on either; there is no database, so judge simulated rollouts with an LLM
judge (``llm``), not with database verifiers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from awm_core import get_backend
from awm_core.argcheck import check_arguments
from awm_core.llm import LLMBackend, LLMError
from awm_core.llm.extract import unfence
from awm_core.models import Message, ToolResult, ToolSpec

if TYPE_CHECKING:
    from awm_envs.runtime.environment import Environment

__all__ = ["SimulatedEnvironment", "SimulatedInstance", "SimulatedPool"]

MAX_SCHEMA_CHARS = 12_000

SYSTEM_PROMPT = """You are the backend of the application "{name}": {description}
You do not talk to anyone. You receive one API call at a time and answer with what the real
backend would return, consistent with the database below and with every earlier answer in
this conversation (writes you reported must be visible to later reads).

Database schema (SQLite):
{schema}

Answer with exactly one JSON object and nothing else:
{{"ok": true, "result": <the JSON the endpoint returns>}} on success, or
{{"ok": false, "error": "<the error message the endpoint would give>"}} when the call fails
(unknown ids, violated constraints, forbidden actions)."""


def _call_text(spec: ToolSpec, arguments: dict[str, Any]) -> str:
    return json.dumps(
        {
            "tool": spec.name,
            "description": spec.description,
            "input_schema": spec.input_schema,
            "arguments": arguments,
        },
        ensure_ascii=False,
    )


def _parse_answer(text: str) -> tuple[bool, Any]:
    """``(ok, result_or_error)`` from the simulator's reply; ValueError when it is not one."""
    data = json.loads(unfence(text)[0])
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        raise ValueError('expected {"ok": true|false, ...}')
    if data["ok"]:
        return True, data.get("result")
    return False, str(data.get("error", "the call failed"))


class SimulatedInstance:
    """One simulated instance (an :class:`awm_core.session.EnvInstance`): its own conversation
    with the simulator model."""

    def __init__(self, env: SimulatedEnvironment, instance_id: str | None = None) -> None:
        self.env = env
        self.id = instance_id or uuid.uuid4().hex[:12]
        self.history: list[Message] = []

    async def list_tools(self) -> list[ToolSpec]:
        return list(self.env.tools)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        started = time.perf_counter()
        spec = self.env.tool_map.get(name) if isinstance(name, str) else None
        if spec is None:
            known = ", ".join(self.env.tool_map)
            return ToolResult(
                content=f"unknown tool {name!r}; available tools: {known}. "
                "Call list_tools for their arguments.",
                is_error=True,
                error_type="unknown_tool",
                latency_s=time.perf_counter() - started,
            )
        args = {} if arguments is None else arguments
        problem = check_arguments(name, spec.input_schema, args)
        if problem is not None:
            return ToolResult(
                content=problem,
                is_error=True,
                error_type="invalid_arguments",
                latency_s=time.perf_counter() - started,
            )
        request = Message(role="user", content=_call_text(spec, args))
        messages = [Message(role="system", content=self.env.system_prompt), *self.history, request]
        try:
            reply = await self.env.backend.chat(messages, temperature=self.env.temperature)
            ok, value = _parse_answer(reply.content)
        except (LLMError, ValueError) as exc:
            return ToolResult(
                content=f"the simulator failed to answer: {type(exc).__name__}: {exc}",
                is_error=True,
                error_type="environment_error",
                latency_s=time.perf_counter() - started,
            )
        self.history += [request, Message(role="assistant", content=reply.content)]
        if len(self.history) > 2 * self.env.history_limit:
            self.history = self.history[-2 * self.env.history_limit :]
        return ToolResult(
            content=value,
            is_error=not ok,
            error_type=None if ok else "tool_error",
            latency_s=time.perf_counter() - started,
        )

    async def snapshot(self) -> bytes:
        """The initial database image: nothing is executed, so nothing changes."""
        return self.snapshot_sync()

    def snapshot_sync(self) -> bytes:
        """Sync form of :meth:`snapshot`."""
        return self.env.template

    async def reset(self) -> None:
        """Forget the conversation with the simulator."""
        self.reset_sync()

    def reset_sync(self) -> None:
        """Sync form of :meth:`reset`."""
        self.history.clear()


class SimulatedPool:
    """``EnvPool``'s shape for simulated instances: ``async with pool.instance() as inst``."""

    def __init__(self, env: SimulatedEnvironment, size: int = 64) -> None:
        self.env = env
        self._slots = asyncio.Semaphore(size)

    @contextlib.asynccontextmanager
    async def instance(self) -> AsyncIterator[SimulatedInstance]:
        async with self._slots:
            yield SimulatedInstance(self.env)

    async def start(self) -> SimulatedPool:
        return self

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> SimulatedPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class SimulatedEnvironment:
    """A real environment's tools and tasks, answered by ``backend`` (a spec or an LLMBackend)."""

    def __init__(
        self,
        env: Environment,
        backend: LLMBackend | str,
        *,
        temperature: float | None = 0.0,
        history_limit: int = 20,
    ) -> None:
        self.real = env
        self.backend = get_backend(backend) if isinstance(backend, str) else backend
        self.temperature = temperature
        self.history_limit = history_limit
        self.tools: list[ToolSpec] = list(env.tools)
        self.tool_map = {t.name: t for t in self.tools}
        schema = (env.path / "schema.sql").read_text(encoding="utf-8")
        if len(schema) > MAX_SCHEMA_CHARS:
            schema = schema[:MAX_SCHEMA_CHARS] + "\n-- (schema cut for length)"
        manifest = env.manifest
        self.system_prompt = SYSTEM_PROMPT.format(
            name=manifest.name or env.id, description=manifest.description, schema=schema
        )

    @property
    def id(self) -> str:
        return f"{self.real.id}-simulated"

    @property
    def tasks(self) -> list[Any]:
        return self.real.tasks

    @property
    def path(self) -> Any:
        return self.real.path

    @property
    def template(self) -> bytes:
        return self.real.template

    def instance(self, instance_id: str | None = None) -> SimulatedInstance:
        return SimulatedInstance(self, instance_id)

    def pool(self, size: int = 64) -> SimulatedPool:
        return SimulatedPool(self, size)
