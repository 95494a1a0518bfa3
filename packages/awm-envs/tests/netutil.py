"""Test helpers for real servers on loopback: a free port, and awm's MCP app served by uvicorn."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import uvicorn

from awm_envs import Environment
from awm_envs.serve.mcp_server import build_http_app
from awm_envs.serve.sessions import InstanceDirectory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.asynccontextmanager
async def http_server(
    env: Environment, idle_timeout: float = 60, fast_path: bool = True, **options: Any
) -> AsyncIterator[tuple[str, InstanceDirectory]]:
    """awm's MCP app for ``env`` on a free loopback port (``options`` go to ``build_http_app``)."""
    port = free_port()
    app, directory = build_http_app(env, idle_timeout=idle_timeout, fast_path=fast_path, **options)
    directory.app = app  # type: ignore[attr-defined]  # lets tests read app.fast.served
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp", directory
    finally:
        server.should_exit = True
        await task
