"""LLM backends: one async chat interface, many implementations chosen by name."""

from awm_core.llm.base import (
    ChatResponse,
    LLMBackend,
    LLMError,
    get_backend,
    list_backends,
)

__all__ = ["ChatResponse", "LLMBackend", "LLMError", "get_backend", "list_backends"]
