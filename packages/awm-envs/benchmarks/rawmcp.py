"""A raw streamable-HTTP MCP client: one session over one keep-alive connection.

Used by the throughput benchmark (the official client measures itself, not the
server, on a 2-core machine) and by the tests that need to misbehave on the
wire (abandoned sessions, floods) in ways the official client will not.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any


class LoadGeneratorError(RuntimeError):
    """The HTTP load generator could not talk MCP to the server (see the message for the answer it got)."""


class RawMCPSession:
    """One streamable-HTTP MCP session over one keep-alive HTTP/1.1 connection: a load generator.

    The official client costs about 4 ms of CPU per call (an httpx request, a
    task group and several memory streams per call), so on a 2-core machine it
    saturates a core at ~250 calls/s and measures itself, not the server. This
    speaks the same protocol (``initialize`` with the session handshake,
    ``notifications/initialized``, ``tools/call`` with the ``mcp-session-id``
    and ``mcp-protocol-version`` headers, ``DELETE`` to end the session) and
    validates every result as a ``CallToolResult``, but with one socket and
    no per-call tasks. It supports only JSON responses (what ``awm envs
    serve`` sends); it is a measuring tool, not a general client.
    """

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.session_id: str | None = None
        self.protocol_version = ""
        self._next_id = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self, client_name: str = "awm-bench") -> RawMCPSession:
        """Connect and run the initialize handshake."""
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        status, headers, answer = await self._post(
            {
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
                    "capabilities": {},
                    "clientInfo": {"name": client_name, "version": "0"},
                },
            }
        )
        if status != 200 or "result" not in answer:
            raise LoadGeneratorError(f"initialize answered HTTP {status}: {answer}")
        self.session_id = headers.get("mcp-session-id")
        self.protocol_version = answer["result"]["protocolVersion"]
        status, _, _ = await self._post({"method": "notifications/initialized"}, notify=True)
        if status != 202:
            raise LoadGeneratorError(f"notifications/initialized answered HTTP {status}")
        return self

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """``tools/call``; the result as a validated ``mcp_types.CallToolResult``."""
        import mcp_types

        status, _, answer = await self._post(
            {"method": "tools/call", "params": {"name": name, "arguments": arguments}}
        )
        if status != 200 or "result" not in answer:
            raise LoadGeneratorError(f"tools/call {name} answered HTTP {status}: {answer}")
        return mcp_types.CallToolResult.model_validate(answer["result"], by_name=False)

    async def close(self) -> None:
        """End the session (``DELETE``) and the connection."""
        if self._writer is None:
            return
        with contextlib.suppress(OSError, LoadGeneratorError, asyncio.IncompleteReadError):
            await self._request(b"DELETE", b"")
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()
        self._writer = None

    async def _post(
        self, message: dict[str, Any], notify: bool = False
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        message = {"jsonrpc": "2.0", **message}
        if not notify:
            self._next_id += 1
            message["id"] = self._next_id
        status, headers, body = await self._request(b"POST", json.dumps(message).encode())
        return status, headers, (json.loads(body) if body else {})

    async def _request(self, method: bytes, body: bytes) -> tuple[int, dict[str, str], bytes]:
        assert self._reader is not None and self._writer is not None
        head = [
            method + b" " + self.path.encode() + b" HTTP/1.1",
            b"host: " + f"{self.host}:{self.port}".encode(),
            b"accept: application/json, text/event-stream",
            b"content-type: application/json",
            b"content-length: " + str(len(body)).encode(),
        ]
        if self.session_id:
            head.append(b"mcp-session-id: " + self.session_id.encode())
        if self.protocol_version:
            head.append(b"mcp-protocol-version: " + self.protocol_version.encode())
        self._writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
                chunks.append(await self._reader.readexactly(size + 2))
                if size == 0:
                    break
            payload = b"".join(c[:-2] for c in chunks)
        else:
            payload = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("content-type", "").startswith("text/event-stream"):
            raise LoadGeneratorError(
                "the server answered with SSE; the load generator reads JSON only"
            )
        return status, headers, payload
