"""The hot path: ``tools/call`` on an established session, answered without the SDK's machinery."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from awm_envs.serve.logs import log_disconnect
from awm_envs.serve.server import call_tool_for
from awm_envs.serve.sessions import INSTANCE_SCOPE_KEY, InstanceDirectory

_FAST_MAX_BODY = 1 << 20


class FastToolCalls:
    """The hot path: ``tools/call`` on an established session, without the SDK's per-request machinery.

    Profiling 64 sessions showed the SDK spending about three times the tool's
    own time per call: a Starlette middleware stack, a memory-stream hop into
    the session's task, a JSON-RPC dispatcher task per request, pydantic
    round trips and a second stream hop back. This path answers the one
    request a rollout makes thousands of times, a well-formed ``tools/call``
    on a session the SDK has already opened (``initialize`` went through the
    SDK), with the same checks: a live session known to the SDK's session
    manager, the same Host/Origin/Content-Type validation, ``Accept``, a
    handshake-era protocol version, ``CallToolRequestParams`` validation and
    the SDK's per-version result serialisation. Anything else (initialize,
    notifications, GET, DELETE, batches, malformed or unusual requests,
    authenticated sessions) is replayed unchanged to the SDK, which owns
    every error answer. If the SDK's internals this relies on are missing
    (another SDK version), it switches itself off and everything goes to
    the SDK.
    """

    def __init__(
        self, server: Server[Any], directory: InstanceDirectory, idle_timeout: float
    ) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.directory = directory
        self.idle_timeout = idle_timeout
        manager = getattr(server, "_session_manager", None)
        self._sessions: dict[str, Any] | None = getattr(manager, "_server_instances", None)
        self._owners: dict[str, Any] = getattr(manager, "_session_owners", {})
        self._security = TransportSecurityMiddleware(getattr(manager, "security_settings", None))
        self.enabled = isinstance(self._sessions, dict)
        self.served = 0

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        """Answer the request and return ``None``, or return the ``receive`` to hand the SDK."""
        if not self.enabled or scope.get("user") is not None:
            return receive
        headers = {k: v for k, v in scope["headers"]}
        session_id = headers.get(b"mcp-session-id", b"").decode("latin-1")
        transport = self._sessions.get(session_id) if self._sessions is not None else None
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if (
            transport is None
            or getattr(transport, "is_terminated", True)
            or self._owners.get(session_id) is not None
            or version not in HANDSHAKE_PROTOCOL_VERSIONS
            or b"application/json" not in headers.get(b"accept", b"")
            and b"*/*" not in headers.get(b"accept", b"")
        ):
            return receive
        try:
            length = int(headers.get(b"content-length", b"-1"))
        except ValueError:
            return receive
        if not 0 <= length <= _FAST_MAX_BODY:
            return receive
        from starlette.requests import Request

        if await self._security.validate_request(Request(scope), is_post=True) is not None:
            return receive
        body, more, disconnected = await self._read_body(receive)
        if disconnected:  # nobody to answer: one log line, nothing for the SDK to parse
            log_disconnect(scope)
            return None
        replay = _replaying(body, more, disconnected, receive)
        if more:
            return replay
        try:
            message = json.loads(body)
            params = self._params(message)
        except (ValueError, TypeError, AttributeError):
            return replay
        if params is None:
            return replay
        key = (
            f"i:{scope[INSTANCE_SCOPE_KEY]}" if scope.get(INSTANCE_SCOPE_KEY) else f"s:{session_id}"
        )
        with self._holding(transport):
            result = await call_tool_for(self.directory, key, params)
            dumped = serialize_server_result(
                "tools/call",
                version,
                result.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
        payload = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": dumped},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode()
        self.served += 1
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"mcp-session-id", session_id.encode("latin-1")),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
        return None

    @staticmethod
    def _params(message: Any) -> types.CallToolRequestParams | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        if message.get("method") != "tools/call" or not isinstance(message.get("params"), dict):
            return None
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
            return None
        try:
            return types.CallToolRequestParams.model_validate(message["params"], by_name=False)
        except ValueError:
            return None

    @staticmethod
    async def _read_body(receive: Any) -> tuple[bytes, bool, bool]:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"".join(chunks), False, True
            chunk = message.get("body", b"")
            chunks.append(chunk)
            size += len(chunk)
            if not message.get("more_body"):
                return b"".join(chunks), False, False
            if size > _FAST_MAX_BODY:
                return b"".join(chunks), True, False

    @contextlib.contextmanager
    def _holding(self, transport: Any) -> Any:
        """Keep the SDK's session alive while (and for ``idle_timeout`` after) a fast call.

        The SDK ends a session whose transport saw no request for its idle
        timeout; calls answered here never reach the transport, so its idle
        deadline is pushed out exactly as its own request handling would.
        """
        scope = getattr(transport, "idle_scope", None)
        if scope is not None:
            scope.deadline = math.inf
        try:
            yield
        finally:
            if scope is not None and not getattr(transport, "_requests_in_flight", 0):
                scope.deadline = anyio.current_time() + self.idle_timeout


def _replaying(body: bytes, more: bool, disconnected: bool, receive: Any) -> Any:
    """A ``receive`` that yields the already-read body first, then the original stream."""
    pending: list[dict[str, Any]] = [
        {"type": "http.disconnect"}
        if disconnected and not body
        else {"type": "http.request", "body": body, "more_body": more}
    ]

    async def replay() -> dict[str, Any]:
        if pending:
            return pending.pop()
        message: dict[str, Any] = await receive()
        return message

    return replay
