"""awm-train: GRPO on awm environments through verl, with history-aware rows.

The names in ``__init__.pyi`` are the public API (imported on first use: none of them needs verl;
``awm_train.verl_loop`` is the one module that imports it). See docs/training.md.
"""

from awm_core.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, __file__)
