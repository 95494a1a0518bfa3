"""Environments made for training experiments, shipped with awm-train.

Each sub-folder is an awm bundle (``manifest.json``, ``app.py``, ...), registered
by id through awm-train's plugin. ``lights`` is three tools over one table, with
tasks of one or two calls: small enough that a 135 M-parameter model can learn it
with GRPO on a CPU (the ``cpu-learn`` recipe, ``docs/benchmarks/learning-cpu.json``).
Its ``tasks.json`` and ``verifiers.py`` are written by
``packages/awm-train/tools/make_lights.py``.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ENVS_DIR"]

ENVS_DIR = Path(__file__).resolve().parent
"""The folder whose sub-folders are the training environments."""
