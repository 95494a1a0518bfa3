"""Which bfcl-eval model handler native mode runs (``awm bench run bfcl --handler NAME``).

The BFCL leaderboard runs every model through its own handler class, listed in
bfcl-eval's ``MODEL_CONFIG_MAPPING`` (model name -> handler class, function-calling or
prompt mode, whether ``.`` in function names becomes ``_``). ``NAME`` is one of those
model names (``Qwen/Qwen3-8B-FC``: :class:`QwenFCHandler`; ``Qwen/Qwen3-8B``:
:class:`QwenHandler`, prompt mode) or a handler class name, which runs as the first
leaderboard model that uses it. Without ``--handler`` native mode keeps awm's default,
bfcl-eval's generic OpenAI function-calling handler (no leaderboard model uses it in
this release).

awm serves the model (any awm backend, or the oracle) at an OpenAI-compatible
endpoint, so a handler can run here when it talks to one:

* ``completions``: bfcl's local-inference handlers (:class:`OSSHandler` subclasses:
  Qwen, Llama, Hammer, ...) apply the model's chat template themselves and send the
  raw prompt to ``POST /v1/completions``, as against the vLLM server bfcl starts;
* ``chat``: :class:`OpenAICompletionsHandler` and its subclasses send chat
  completions (tools in the request in FC mode, bfcl's system prompt in prompt mode).

Handlers built on other SDKs (Anthropic, Gemini, Mistral, Cohere, the OpenAI
Responses API, ...) and the ones listed in :data:`UNSUPPORTED` cannot.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any

from awm_bench.bfcl.upstream import NATIVE_MODEL, bfcl, register_models
from awm_core.errors import AWMError

DEFAULT_HANDLER = "OpenAICompletionsHandler"
"""awm's default native handler: bfcl-eval's generic OpenAI function-calling handler."""

UNSUPPORTED: dict[str, str] = {
    "QwenAPIHandler": "it streams every request (stream=True), which awm's endpoint does "
    "not serve; use QwenFCHandler or QwenHandler (Qwen/Qwen3-*-FC, Qwen/Qwen3-*), the "
    "leaderboard's handlers for the open Qwen3 weights",
    "QwenAgentThinkHandler": "it talks through qwen-agent to a server fixed at "
    "localhost:8000, not to the endpoint awm serves",
    "QwenAgentNoThinkHandler": "it talks through qwen-agent to a server fixed at "
    "localhost:8000, not to the endpoint awm serves",
    "WriterHandler": "it talks through the Writer SDK, not an OpenAI client",
    "DeepSeekAPIHandler": "bfcl-eval 2025.8.6.2 cannot build it (it names "
    "ModelStyle.OpenAI, which that release does not define)",
}
"""Handlers whose class would pass :func:`resolve_handler`'s checks but cannot work here."""

_OSS = ("bfcl_eval.model_handler.local_inference.base_oss_handler", "OSSHandler")
_CHAT = ("bfcl_eval.model_handler.api_inference.openai_completion", "OpenAICompletionsHandler")


class UnknownHandlerError(AWMError, ValueError):
    """``--handler`` names no bfcl-eval model or handler class that native mode can run."""


class HandlerSetupError(AWMError):
    """The handler cannot run with this model here (what to do instead is in the message)."""


@dataclass(frozen=True)
class HandlerSpec:
    """One bfcl-eval handler as native mode runs it.

    ``bfcl_model``: the leaderboard model name the handler is built with (None for
    awm's default, built as ``SERVED-FC``); ``kind``: ``completions`` (raw prompts to
    ``/v1/completions``) or ``chat`` (chat completions); ``score_model``: the name
    registered in bfcl-eval's model map under which its checkers score the outputs
    (with this handler's decoding and its ``underscore_to_dot``).
    """

    name: str
    class_name: str
    bfcl_model: str | None
    kind: str
    is_fc_model: bool
    underscore_to_dot: bool
    score_model: str

    @property
    def label(self) -> str:
        """How the summary and report name it: ``QwenFCHandler (Qwen/Qwen3-8B-FC)``."""
        return f"{self.class_name} ({self.bfcl_model})" if self.bfcl_model else self.class_name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "class": self.class_name,
            "bfcl_model": self.bfcl_model,
            "kind": self.kind,
            "fc": self.is_fc_model,
        }

    def handler_class(self) -> Any:
        return _classes()[self.class_name]

    def build(self, served: str, temperature: float) -> Any:
        """A fresh handler instance, flagged as bfcl's generation step flags it."""
        cls = self.handler_class()
        handler = cls(self.bfcl_model or f"{served}-FC", temperature)
        handler.is_fc_model = self.is_fc_model
        return handler


def default_handler() -> HandlerSpec:
    """awm's default: bfcl-eval's OpenAI FC handler, scored as :data:`NATIVE_MODEL`."""
    register_models()
    return HandlerSpec(
        name=DEFAULT_HANDLER,
        class_name=DEFAULT_HANDLER,
        bfcl_model=None,
        kind="chat",
        is_fc_model=True,
        underscore_to_dot=True,
        score_model=NATIVE_MODEL,
    )


def _mapping() -> dict[str, Any]:
    mapping: dict[str, Any] = bfcl.attr("bfcl_eval.constants.model_config", "MODEL_CONFIG_MAPPING")
    return mapping


def _classes() -> dict[str, Any]:
    """Every handler class the model map uses (and the default), by class name."""
    out = {c.model_handler.__name__: c.model_handler for c in _mapping().values()}
    out[DEFAULT_HANDLER] = bfcl.attr(*_CHAT)
    return out


def _kind(cls: Any) -> str | None:
    """``completions``, ``chat``, or None when the class cannot talk to awm's endpoint."""
    if cls.__name__ in UNSUPPORTED:
        return None
    if issubclass(cls, bfcl.attr(*_OSS)):
        return "completions"
    if issubclass(cls, bfcl.attr(*_CHAT)):
        return "chat"
    return None


def supported_handlers() -> list[str]:
    """The handler class names native mode can run, sorted."""
    return sorted(n for n, cls in _classes().items() if _kind(cls) is not None)


def example_models(limit: int = 8) -> list[str]:
    """A few leaderboard model names native mode can run (the Qwen3 ones first)."""
    names = [k for k, c in _mapping().items() if _kind(c.model_handler) is not None]
    names.sort(key=lambda k: (not k.startswith("Qwen/Qwen3-"), k))
    return names[:limit]


def _alias(bfcl_model: str) -> str:
    """The name a leaderboard model is scored under: bfcl-eval looks names up after
    turning ``_`` into ``/``, so neither may appear."""
    return "awm-native-" + re.sub(r"[_/]", "-", bfcl_model)


def _model_of_class(class_name: str, mapping: dict[str, Any]) -> str:
    """The leaderboard model a handler class runs as: the first one using it whose name
    holds the class's stem (``QwenFCHandler``: a ``Qwen`` model), else the first one."""
    users = [k for k, c in mapping.items() if c.model_handler.__name__ == class_name]
    stem = re.sub(r"(FC)?Handler.*$", "", class_name).lower()
    named = [k for k in users if stem and stem in k.lower()]
    return (named or users)[0]


def resolve_handler(name: str | None) -> HandlerSpec:
    """The handler ``--handler NAME`` asks for (awm's default for None).

    Raises :class:`UnknownHandlerError` naming valid choices when ``name`` is neither
    a bfcl-eval model name nor a handler class, or when its handler cannot talk to an
    OpenAI-compatible endpoint.
    """
    if name is None or name == DEFAULT_HANDLER:
        return default_handler()
    register_models()
    mapping = _mapping()
    classes = _classes()
    if name in mapping:
        bfcl_model = name
    elif name in classes:
        bfcl_model = _model_of_class(name, mapping)
    else:
        close = difflib.get_close_matches(name, [*mapping, *classes], n=5, cutoff=0.5)
        raise UnknownHandlerError(
            f"--handler {name!r} is neither a bfcl-eval model name nor a handler class"
            + (f"; did you mean {', '.join(close)}?" if close else ".")
            + f" Model names, e.g.: {', '.join(example_models())}."
            + f" Handler classes native mode can run: {', '.join(supported_handlers())}."
        )
    config = mapping[bfcl_model]
    cls = config.model_handler
    kind = _kind(cls)
    if kind is None:
        why = UNSUPPORTED.get(
            cls.__name__,
            "it does not talk to an OpenAI-compatible endpoint (another SDK or API)",
        )
        raise UnknownHandlerError(
            f"--handler {name!r}: bfcl-eval's {cls.__name__} cannot run against the "
            f"endpoint awm serves: {why}. Handler classes native mode can run: "
            f"{', '.join(supported_handlers())}."
        )
    alias = _alias(bfcl_model)
    if alias not in mapping:
        mapping[alias] = replace(config, model_name=alias)
    return HandlerSpec(
        name=name,
        class_name=cls.__name__,
        bfcl_model=bfcl_model,
        kind=kind,
        is_fc_model=bool(config.is_fc_model),
        underscore_to_dot=bool(config.underscore_to_dot),
        score_model=alias,
    )


def check_model(spec: HandlerSpec, model: str) -> None:
    """Raise :class:`HandlerSetupError` when ``spec`` cannot run ``model`` (``--model``).

    A local-inference handler sends raw prompts: the oracle answers them, and an
    ``openai:NAME`` model gets them at its own ``/v1/completions``; awm's other
    backends only answer chat messages.
    """
    if spec.kind == "completions" and model != "oracle" and not model.startswith("openai:"):
        raise HandlerSetupError(
            f"--handler {spec.name}: bfcl-eval's {spec.class_name} sends the raw prompt (the "
            f"model's chat template applied by the handler) to /v1/completions, and {model} "
            "answers chat messages only. Serve the checkpoint with an OpenAI-compatible "
            "completions server (e.g. `vllm serve DIR --served-model-name NAME`) and run "
            "--model openai:NAME with OPENAI_BASE_URL set"
        )
