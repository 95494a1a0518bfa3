"""What stands between the network and the MCP app: a bearer token, body caps, read deadlines.

Why: ``awm envs serve --host 0.0.0.0`` is what a multi-node trainer runs, and
instance ids in ``/mcp/i/{id}`` are chosen by clients (a rollout id), so
anyone who reaches the port could read and change any rollout's instance.
A bind beyond loopback therefore needs a token (or an explicit ``--no-auth``);
every body is capped before it is read; and a connection that sends its
headers or body too slowly (a half-open, "slowloris" client) is dropped
instead of held forever.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

TOKEN_ENV = "AWM_MCP_TOKEN"
MAX_BODY_BYTES = 8 * 1024 * 1024  # far above any MCP request; a snapshot goes over the pool API
HEADER_TIMEOUT_S = 10.0  # from the connection (or a request's first byte) to its last header
BODY_TIMEOUT_S = 30.0  # from the last header to the end of the body


class AuthRequired(ValueError):
    """A non-loopback bind without a token and without an explicit ``--no-auth``."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_token(host: str, token: str | None, no_auth: bool) -> str | None:
    """The token to require for ``host`` (None: none), or :class:`AuthRequired`."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if token is not None:
        return token  # asked for: required on loopback too
    if no_auth or is_loopback(host):
        return None
    raise AuthRequired(
        f"serving on {host} exposes every instance to whoever reaches the port: pass --token "
        f"(or set {TOKEN_ENV}); clients then send 'Authorization: Bearer <token>'. "
        "To serve without it on a network you trust, pass --no-auth."
    )


def authorized(scope: dict[str, Any], token: str) -> bool:
    """Whether the request carries ``Authorization: Bearer <token>`` (compared in constant time)."""
    expected = b"Bearer " + token.encode()
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            return hmac.compare_digest(value, expected)
    return False


def declared_length(scope: dict[str, Any]) -> int | None:
    """The request's Content-Length, or None when it has none (or an unreadable one)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class TimedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body read deadlines.

    uvicorn closes idle keep-alive connections, but not one that opened and
    sends nothing, or sends a header a byte at a time: each holds a socket and
    a protocol object forever. Here a connection gets ``HEADER_TIMEOUT_S`` to
    finish each request's headers and ``BODY_TIMEOUT_S`` for its body.
    """

    header_timeout = HEADER_TIMEOUT_S
    body_timeout = BODY_TIMEOUT_S

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._awm_timer: Any = None
        self._arm(self.header_timeout)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._awm_timer = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        timer = getattr(self, "_awm_timer", None)
        if timer is not None:
            timer.cancel()
            self._awm_timer = None

    def _too_slow(self) -> None:
        self._awm_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.header_timeout)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.body_timeout)

    def on_message_complete(self) -> None:
        self._disarm()  # the app has the request now; its own deadlines apply
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


__all__ = [
    "BODY_TIMEOUT_S",
    "HEADER_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "TOKEN_ENV",
    "AuthRequired",
    "TimedHttpToolsProtocol",
    "authorized",
    "declared_length",
    "is_loopback",
    "resolve_token",
]
