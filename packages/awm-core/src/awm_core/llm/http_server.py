"""A minimal OpenAI-compatible HTTP front (FastAPI) and a background-thread runner.

Two users: :mod:`awm_core.llm.scripted_server` (tests talk real HTTP to a
script) and ``awm serve-llm`` (any backend, e.g. the local SmolLM2, behind an
endpoint that vLLM-style clients understand). FastAPI and uvicorn come from the
``serve`` extra, so they are imported only here.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the endpoint
# annotations at runtime, and ``Request`` is imported inside the factory.

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from awm_core.errors import AWMError

if TYPE_CHECKING:
    from fastapi import FastAPI

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Takes the request body of ``POST /v1/chat/completions``, returns the completion JSON."""


class HTTPFailure(AWMError):
    """Raised by a handler to answer with an HTTP error status (OpenAI error body)."""

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class ServeExtraMissingError(AWMError):
    """FastAPI/uvicorn are not installed."""

    def __init__(self) -> None:
        super().__init__(
            "serving an OpenAI-compatible endpoint needs FastAPI and uvicorn: "
            "pip install 'awm-core[serve]'"
        )


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "code": status, "param": None}}


def build_openai_app(handler: Handler, *, models: list[str]) -> "FastAPI":
    """A FastAPI app with ``POST /v1/chat/completions`` and ``GET /v1/models``.

    ``handler`` does the work; an :class:`HTTPFailure` it raises becomes an
    OpenAI-style error response with that status, any other exception a 500
    whose message names the exception (never a silent empty answer).
    """
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ServeExtraMissingError() from exc

    app = FastAPI(title="awm OpenAI-compatible endpoint", docs_url=None, redoc_url=None)

    @app.get("/v1/models")
    async def list_models() -> dict[str, Any]:
        now = int(time.time())
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": now, "owned_by": "awm"} for m in models
            ],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse(_error_body(400, "request body is not JSON"), status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return JSONResponse(
                _error_body(400, "request body needs a 'messages' list"), status_code=400
            )
        try:
            return await handler(body)
        except HTTPFailure as exc:
            return JSONResponse(
                _error_body(exc.status, exc.message), status_code=exc.status, headers=exc.headers
            )
        except Exception as exc:  # the client must see why, as a typed 500
            return JSONResponse(_error_body(500, f"{type(exc).__name__}: {exc}"), status_code=500)

    return app


def free_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound listening-ready socket; port 0 lets the OS pick a free port (no probing race)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


class BackgroundServer:
    """Runs an ASGI app under uvicorn in a daemon thread; a context manager.

    The socket is bound before the thread starts, so ``port`` is known at once
    and two servers can never race for the same port.
    """

    def __init__(
        self, app: Any, *, host: str = "127.0.0.1", port: int = 0, startup_timeout_s: float = 10.0
    ) -> None:
        self.app = app
        self.host = host
        self._requested_port = port
        self._startup_timeout_s = startup_timeout_s
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "BackgroundServer":
        """Start serving; returns once uvicorn accepts connections."""
        try:
            import uvicorn
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ServeExtraMissingError() from exc
        self._sock = free_socket(self.host, self._requested_port)
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        sock = self._sock

        def run() -> None:
            asyncio.run(self._server.serve(sockets=[sock]))

        self._thread = threading.Thread(target=run, name=f"awm-http-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise AWMError(f"the HTTP server on {self.host}:{self.port} did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for the thread (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "BackgroundServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
