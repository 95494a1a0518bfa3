"""``awm serve-llm``: any backend behind an OpenAI-compatible endpoint.

With the default ``local:smollm2`` this gives every OpenAI-protocol client in
awm (benchmarks, the synthesis pipeline, ``openai:`` episodes) a real model on
127.0.0.1 with no API key and no network.
"""

from __future__ import annotations

from typing import Any

import click

from awm_core.llm.base import LLMBackend, LLMError, LLMRequestError
from awm_core.llm.http_server import HTTPFailure, build_openai_app
from awm_core.llm.wire import completion_to_openai, message_from_openai
from awm_core.registry import get_backend


def build_backend_app(backend: LLMBackend, *, model_name: str | None = None) -> Any:
    """A FastAPI app answering chat completions with ``backend``.

    Backend failures become HTTP errors with the backend's message: a rejected
    request stays a 400, anything else is a 502 (the upstream model failed), so
    a client's retry logic sees the same distinction it would against a proxy.
    """
    served = model_name or backend.name

    async def handle(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("stream"):
            raise HTTPFailure(400, "streaming is not supported by awm serve-llm; send stream=false")
        messages = [message_from_openai(m) for m in body["messages"]]
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        # top_p and seed only when asked for: a backend written before they existed still serves
        extra = {k: body[k] for k in ("top_p", "seed") if body.get(k) is not None}
        try:
            response = await backend.chat(
                messages,
                tools=body.get("tools") or None,
                temperature=body.get("temperature"),
                max_tokens=int(max_tokens) if max_tokens else None,
                response_format=body.get("response_format"),
                **extra,
            )
        except LLMRequestError as exc:
            raise HTTPFailure(400, str(exc)) from exc
        except LLMError as exc:
            raise HTTPFailure(502, str(exc)) from exc
        return completion_to_openai(response.model_copy(update={"model": served}), model=served)

    return build_openai_app(handle, models=[served])


@click.command(name="serve-llm")
@click.option(
    "--model",
    "-m",
    "spec",
    default="local:smollm2",
    show_default=True,
    help="Backend to serve (PREFIX:MODEL, see `awm plugins`).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to bind.")
@click.option(
    "--served-name",
    default=None,
    help="Model id reported by /v1/models (default: the backend spec).",
)
@click.option("--preload/--no-preload", default=True, help="Load the model before serving.")
def serve_llm_command(
    spec: str, host: str, port: int, served_name: str | None, preload: bool
) -> None:
    """Serve an LLM backend as an OpenAI-compatible endpoint (POST /v1/chat/completions)."""
    import uvicorn

    backend = get_backend(spec)
    load = getattr(backend, "load", None)
    if preload and callable(load):
        click.echo(f"loading {backend.name} ...", err=True)
        load()
    app = build_backend_app(backend, model_name=served_name)
    click.echo(f"serving {backend.name} at http://{host}:{port}/v1", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
