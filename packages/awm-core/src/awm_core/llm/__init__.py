"""LLM backends: one async chat interface, many implementations chosen by name.

Built in (registered by :mod:`awm_core.builtin` through the same hook as any
plugin): ``scripted`` (replies from a list), ``openai:MODEL`` (any
OpenAI-compatible endpoint) and ``local:smollm2`` (a real model on the CPU,
from the ``local`` extra). :func:`awm_core.get_backend` builds one by name.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
