"""The ASGI router in front of the SDK's app: instance paths, limits, the fast path.

``/mcp/i/{id}`` is served as ``/mcp`` with the id remembered in the scope; the
session cap and the rate limit (:mod:`awm_envs.serve.limits`) are applied
before the SDK sees a request; ``tools/call`` on an open session goes to the
fast path (:mod:`awm_envs.serve.fastpath`) when it is on.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from awm_envs.serve.fastpath import FastToolCalls
from awm_envs.serve.guard import MAX_BODY_BYTES, authorized, declared_length
from awm_envs.serve.limits import OPENING, RateLimiter, SessionLimits
from awm_envs.serve.logs import throttle
from awm_envs.serve.sessions import INSTANCE_SCOPE_KEY, InstanceDirectory


async def _send_error(
    send: Any,
    status: int,
    code: int,
    message: str,
    request_id: Any = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """A JSON-RPC error body with an HTTP status (what the official client raises as ``MCPError``)."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class InstancePathRouter:
    """ASGI wrapper in front of the SDK's app.

    ``/mcp/i/{id}`` is served as ``/mcp`` with the id remembered in the scope.
    On ``/mcp`` itself, state lives in the session, so a sessionless
    (2026-era) request is answered "method not found": the official client's
    ``auto`` mode then falls back to the session handshake and gets its own
    instance, instead of silently losing state between calls.
    """

    def __init__(
        self,
        app: Any,
        path: str,
        directory: InstanceDirectory | None = None,
        fast: FastToolCalls | None = None,
        limits: SessionLimits | None = None,
        rate: RateLimiter | None = None,
        token: str | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.directory = directory
        self.fast = fast
        self.limits = limits if limits is not None and limits.enabled else None
        self.rate = rate
        self.prefix = path.rstrip("/") + "/i/"
        self.path = path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            await self._handle(scope, receive, send)
        except asyncio.CancelledError:
            # uvicorn cancels the requests still running when its graceful shutdown time is up
            # (an open stream, a call that never ends): one line, not a traceback per request
            throttle.warning(
                "cancelled",
                f"shutting down: cancelled a request still in flight ({scope['method']} {scope['path']})",
            )

    async def _handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.token is not None and not authorized(scope, self.token):
            await _send_error(
                send,
                401,
                -32001,
                "unauthorized: this server requires 'Authorization: Bearer <token>' "
                "(the token given to awm envs serve with --token or AWM_MCP_TOKEN)",
                headers=((b"www-authenticate", b'Bearer realm="awm"'),),
            )
            return
        length = declared_length(scope)
        if length is not None and length > MAX_BODY_BYTES:
            await _send_error(
                send, 413, -32600, f"request body too large ({length} > {MAX_BODY_BYTES} bytes)"
            )
            return
        if self.rate is not None:
            client = scope.get("client")
            address = client[0] if client else ""
            wait = self.rate.check(address)
            if wait:
                await self._refuse_rate(send, address, wait)
                return
        session_id = version = None
        for k, v in scope["headers"]:
            if k == b"mcp-session-id":
                session_id = v.decode("latin-1")
            elif k == b"mcp-protocol-version":
                version = v.decode("latin-1")
        if scope["path"].startswith(self.prefix):
            instance_id = scope["path"][len(self.prefix) :].strip("/")
            if instance_id and "/" not in instance_id:
                scope = dict(scope)
                scope[INSTANCE_SCOPE_KEY] = instance_id
                scope["path"] = self.path
                scope["raw_path"] = self.path.encode()
        elif (
            scope["path"] == self.path
            and scope["method"] == "POST"
            and version is not None
            and version not in HANDSHAKE_PROTOCOL_VERSIONS
        ):
            await self._refuse_sessionless(receive, send)
            return
        limits = self.limits
        if limits is None:
            await self._dispatch(scope, receive, send)
        elif session_id is not None:
            reason = limits.gone(session_id)
            if reason is not None:
                await _send_error(send, 404, -32600, limits.gone_message(session_id, reason))
                return
            counted = limits.begin(session_id)
            try:
                await self._dispatch(scope, receive, send)
            finally:
                if counted:
                    limits.end(session_id)
        elif (
            scope["method"] == "POST"
            and scope["path"] == self.path
            and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
        ):
            # a request that opens a session: make room (or refuse) before the SDK admits it
            if limits.full() and not limits.evict_idle():
                limits.refusals += 1
                throttle.warning("refuse", limits.busy_message())
                await _send_error(
                    send, 503, -32603, limits.busy_message(), headers=((b"retry-after", b"1"),)
                )
                return
            opening: list[str] = []
            token = OPENING.set(opening)
            try:
                await self._dispatch(scope, receive, send)
            finally:
                OPENING.reset(token)
                for opened in opening:
                    limits.end(opened)
        else:
            await self._dispatch(scope, receive, send)
        if scope["method"] == "DELETE" and session_id and self.directory is not None:
            # the client closed its session: free its instance now rather than at the idle timeout
            if limits is not None:
                limits.closed(session_id)
            await self.directory.close(f"s:{session_id}")

    async def _dispatch(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.fast is not None and scope["method"] == "POST" and scope["path"] == self.path:
            receive = await self.fast.handle(scope, receive, send)
            if receive is None:
                return
        await self.app(scope, receive, send)

    async def _refuse_rate(self, send: Any, address: str, wait: float) -> None:
        assert self.rate is not None
        message = (
            f"Too many requests from {address or 'this client'}: over the rate limit of "
            f"{self.rate.rate:g} requests/s per client address (--rate-limit). "
            f"Retry in {wait:.2f} s."
        )
        throttle.warning("rate", message)
        retry = str(max(1, math.ceil(wait))).encode()
        await _send_error(send, 429, -32000, message, headers=((b"retry-after", retry),))

    async def _refuse_sessionless(self, receive: Any, send: Any) -> None:
        chunks, size = [], 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:  # read no further than the cap (a body without a length)
                await _send_error(send, 413, -32600, f"request body over {MAX_BODY_BYTES} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        try:
            request_id = json.loads(b"".join(chunks)).get("id")
        except (ValueError, AttributeError):
            request_id = None
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": -32601,
                    "message": f"{self.path} keeps one instance per session: use the session handshake, "
                    f"or {self.prefix}{{instance_id}} for sessionless requests",
                },
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
