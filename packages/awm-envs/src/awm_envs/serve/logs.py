"""Log lines a busy server can afford: throttled, and one line per client that hung up."""

from __future__ import annotations

import logging
import math
import time
from typing import Any

# the server's one log, under the name it had before the serve package was split up, so
# logging configuration that addresses it keeps working
logger = logging.getLogger("awm_envs.serve.mcp_server")


class _Throttled:
    """One log line per ``kind`` at most every ``interval`` seconds; the next one says how many were held back."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self._last: dict[str, tuple[float, int]] = {}

    def allow(self, kind: str) -> tuple[bool, int]:
        """Whether to log now, and how many lines of this kind were held back since the last one."""
        now = time.monotonic()
        last, held = self._last.get(kind, (-math.inf, 0))
        if now - last >= self.interval:
            self._last[kind] = (now, 0)
            return True, held
        self._last[kind] = (last, held + 1)
        return False, held + 1

    def warning(self, kind: str, message: str) -> None:
        ok, held = self.allow(kind)
        if ok:
            logger.warning("%s%s", message, f" ({held} more since the last report)" if held else "")


throttle = _Throttled()


class _OneLineClientDisconnects(logging.Filter):
    """The SDK logs a client that hung up mid-request as an error with a traceback: make it one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        from starlette.requests import ClientDisconnect

        if not isinstance(exc, ClientDisconnect):
            return True
        what = record.getMessage()
        record.msg = "client disconnected before its request was complete; dropped it (%s)"
        record.args = (what,)
        record.exc_info = record.exc_text = record.stack_info = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        ok, held = throttle.allow("disconnect")
        if ok and held:
            record.msg += f" ({held} more since the last report)"
        return ok


def quiet_client_disconnects() -> None:
    sdk = logging.getLogger("mcp.server.streamable_http")
    if not any(isinstance(f, _OneLineClientDisconnects) for f in sdk.filters):
        sdk.addFilter(_OneLineClientDisconnects())


def log_disconnect(scope: dict[str, Any]) -> None:
    ok, held = throttle.allow("disconnect")
    if ok:
        logger.warning(
            "client disconnected before its request was complete; dropped it (%s %s)%s",
            scope.get("method"),
            scope.get("path"),
            f" ({held} more since the last report)" if held else "",
        )
