"""The MCP server for one environment, on the official ``mcp`` SDK, and stdio serving.

``tools/list`` answers the environment's tools; ``tools/call`` runs on the
instance of the caller's session (see :mod:`awm_envs.serve.sessions`). The SDK
does not validate arguments against ``input_schema``; the instance does (see
:mod:`awm_core.argcheck`), and every failure comes back as ``is_error``
content with a message the agent can act on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server

from awm_core.models import ToolResult, ToolSpec
from awm_envs.runtime.environment import Environment
from awm_envs.serve.sessions import DEFAULT_IDLE_TIMEOUT_S, INSTANCE_SCOPE_KEY, InstanceDirectory


def to_mcp_tool(spec: ToolSpec) -> types.Tool:
    """An awm ToolSpec as an MCP Tool (the input schema is passed through unchanged)."""
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.input_schema)


def to_mcp_result(result: ToolResult) -> types.CallToolResult:
    """Success: the JSON payload as text plus ``structured_content``; failure: the message, ``is_error``."""
    if result.is_error:
        text = f"[{result.error_type}] {result.content}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            is_error=True,
            _meta={"awm/error_type": result.error_type},
        )
    payload = result.content
    text = (
        payload
        if isinstance(payload, str)
        else json.dumps(payload, ensure_ascii=False, default=str)
    )
    structured = payload if isinstance(payload, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=False,
    )


async def call_tool_for(
    directory: InstanceDirectory, key: str, params: types.CallToolRequestParams
) -> types.CallToolResult:
    """Run one ``tools/call`` on the instance behind ``key`` (the SDK handler and the fast path share it)."""
    try:
        instance = await directory.get(key)
        result = await instance.call_tool(params.name, params.arguments or {})
    except Exception as exc:  # the instance could not even be created
        result = ToolResult(
            content=f"environment unavailable: {exc}",
            is_error=True,
            error_type="environment_error",
        )
    if key.startswith("r:"):
        await directory.close(key)
    return to_mcp_result(result)


def _key_for(ctx: Any) -> str:
    request = getattr(ctx, "request", None)
    if request is None:
        return "stdio"
    scope = getattr(request, "scope", {})
    explicit = scope.get(INSTANCE_SCOPE_KEY)
    if explicit:
        return f"i:{explicit}"
    session_id = request.headers.get("mcp-session-id")
    if session_id:
        return f"s:{session_id}"
    # A sessionless (stateless-era) request without an explicit instance: there is no
    # identity to keep state under, so it gets a fresh instance that lives for this request.
    return f"r:{id(request)}"


def build_server(
    env: Environment,
    *,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    tools: list[ToolSpec] | None = None,
    shared_instance: bool = False,
) -> tuple[Server[Any], InstanceDirectory]:
    """A low-level MCP server for ``env`` and the directory of its instances.

    ``factory(key)`` makes an instance for a new session (default: an
    in-process instance; pass one that uses a :class:`~awm_envs.pool.remote.WorkerPool`
    to sandbox the tool code, with the ``tools`` it reported, so that the
    bundle's ``app.py`` is never imported in this process). ``shared_instance``: one
    instance for every session (see :class:`InstanceDirectory`).
    """

    async def _default_factory(key: str) -> Any:
        return env.instance()

    directory = InstanceDirectory(factory or _default_factory, idle_timeout, shared=shared_instance)
    mcp_tools = [to_mcp_tool(t) for t in (env.tools if tools is None else tools)]
    manifest = env.manifest  # read from manifest.json: does not import app.py

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await call_tool_for(directory, _key_for(ctx), params)

    server: Server[Any] = Server(
        f"awm-{manifest.id}",
        version=manifest.version,
        instructions=manifest.description,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
    return server, directory


async def serve_stdio(
    env: Environment,
    *,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    factory: Callable[[str], Awaitable[Any]] | None = None,
    tools: list[ToolSpec] | None = None,
) -> None:
    """Serve one client over stdin/stdout until it disconnects (``factory``/``tools``: see :func:`build_server`)."""
    from mcp.server.stdio import stdio_server

    server, directory = build_server(env, idle_timeout=idle_timeout, factory=factory, tools=tools)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await directory.close_all()
