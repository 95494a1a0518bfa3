"""awm-train: GRPO on awm environments through verl, with history-aware rows.

The names below are the public API (imported on first use: none of them needs verl;
``awm_train.verl_loop`` is the one module that imports it). See docs/training.md.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from awm_core.lazy import lazy_getattr

try:
    __version__ = version("awm-train")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0.0.0"

_EXPORTS = {
    "GeneratedTokens": ".tokens",
    "ScriptedGenerator": ".tokens",
    "TokenGenerator": ".tokens",
    "TransformersGenerator": ".tokens",
    "reference_replies": ".tokens",
    "TokenPolicy": ".policy",
    "TokenTurn": ".policy",
    "TrainingEpisode": ".episode",
    "TurnRow": ".episode",
    "run_training_episode": ".episode",
    "PreparedTask": ".prepare",
    "prepare_dataset": ".prepare",
    "select_tasks": ".prepare",
    "split_by_environment": ".prepare",
    "Recipe": ".recipes",
    "load_recipe": ".recipes",
    "list_recipes": ".recipes",
}

if TYPE_CHECKING:
    from awm_train.episode import TrainingEpisode, TurnRow, run_training_episode
    from awm_train.policy import TokenPolicy, TokenTurn
    from awm_train.prepare import PreparedTask, prepare_dataset, select_tasks, split_by_environment
    from awm_train.recipes import Recipe, list_recipes, load_recipe
    from awm_train.tokens import (
        GeneratedTokens,
        ScriptedGenerator,
        TokenGenerator,
        TransformersGenerator,
        reference_replies,
    )

__getattr__ = lazy_getattr("awm_train", _EXPORTS)

__all__ = [
    "GeneratedTokens",
    "PreparedTask",
    "Recipe",
    "ScriptedGenerator",
    "TokenGenerator",
    "TokenPolicy",
    "TokenTurn",
    "TrainingEpisode",
    "TransformersGenerator",
    "TurnRow",
    "__version__",
    "list_recipes",
    "load_recipe",
    "prepare_dataset",
    "reference_replies",
    "run_training_episode",
    "select_tasks",
    "split_by_environment",
]
