"""Training recipes: named sets of verl Hydra overrides, turned into a ``main_ppo`` command.

A recipe is a YAML file (``packages/awm-train/recipes/NAME.yaml``, shipped in
the wheel as ``awm_train/recipes``) with ``description``, ``requires``,
``model`` and ``overrides``. ``awm train run`` adds what every awm run needs
(the data files, the model, the awm agent loop as verl's default loop) and the
user's own overrides last, so they win.
"""

from __future__ import annotations

import importlib.resources
import sys
from dataclasses import dataclass, field
from pathlib import Path

from awm_core.errors import AWMError

__all__ = [
    "Recipe",
    "RecipeError",
    "agent_loop_config",
    "list_recipes",
    "load_recipe",
    "recipes_dir",
]

AGENT_LOOP_FILE = "agent_loop.yaml"


class RecipeError(AWMError):
    """A recipe is missing or malformed."""


def recipes_dir() -> Path:
    """The recipes folder: inside the installed wheel, or ``packages/awm-train/recipes`` in a checkout."""
    packaged = Path(str(importlib.resources.files("awm_train"))) / "recipes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "recipes"


def agent_loop_config() -> Path:
    """verl's ``agent_loop_config_path`` for awm: registers ``awm_agent``."""
    return recipes_dir() / AGENT_LOOP_FILE


def list_recipes() -> list[str]:
    return sorted(p.stem for p in recipes_dir().glob("*.yaml") if p.name != AGENT_LOOP_FILE)


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    requires: str
    model: str
    overrides: list[str]
    env: dict[str, str] = field(default_factory=dict)  # set for verl unless already set

    def command(
        self,
        data: Path,
        *,
        model: str | None = None,
        extra: list[str] | None = None,
        python: str = sys.executable,
    ) -> list[str]:
        """The ``python -m verl.trainer.main_ppo ...`` command line for this recipe."""
        data = data.resolve()
        base = [
            f"data.train_files={data / 'train.parquet'}",
            f"data.val_files={data / 'val.parquet'}",
            f"actor_rollout_ref.model.path={model or self.model}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={agent_loop_config()}",
            "actor_rollout_ref.rollout.agent.default_agent_loop=awm_agent",
        ]
        return [python, "-m", "verl.trainer.main_ppo", *self.overrides, *base, *(extra or [])]


def load_recipe(name_or_path: str) -> Recipe:
    """A recipe by name (``paper``) or by YAML path."""
    import yaml

    path = Path(name_or_path)
    if not path.is_file():
        path = recipes_dir() / f"{name_or_path}.yaml"
    if not path.is_file() or path.name == AGENT_LOOP_FILE:
        raise RecipeError(
            f"no recipe {name_or_path!r}; known: {', '.join(list_recipes())} (or a YAML path)"
        )
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("overrides"), list):
        raise RecipeError(f"{path}: a recipe needs an 'overrides' list")
    bad = [o for o in data["overrides"] if not isinstance(o, str) or "=" not in o]
    if bad:
        raise RecipeError(f"{path}: overrides must be 'key=value' strings, not {bad[:3]}")
    return Recipe(
        name=path.stem,
        description=str(data.get("description", "")),
        requires=str(data.get("requires", "")),
        model=str(data.get("model") or ""),
        overrides=list(data["overrides"]),
        env={str(k): str(v) for k, v in (data.get("env") or {}).items()},
    )
