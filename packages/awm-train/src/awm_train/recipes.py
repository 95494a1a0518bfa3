"""Training recipes: named sets of verl Hydra overrides, turned into a ``main_ppo`` command.

A recipe is a YAML file (``packages/awm-train/recipes/NAME.yaml``, shipped in
the wheel as ``awm_train/recipes``) with ``description``, ``requires``,
``model``, ``overrides``, optionally ``env`` (variables verl's processes need),
``agent_loop`` (settings of the ``awm_agent`` loop, merged over the shipped
``agent_loop.yaml`` entry), ``perturbations`` and ``tasks`` (what ``awm train prepare
--recipe`` mixes into the data: perturbed rows and a tag filter, see
:mod:`awm_train.safety`) and ``extends`` (a base recipe whose overrides come
first). ``awm train run`` adds what every awm run needs (the data files, the
model, the awm agent loop as verl's default loop) and the user's own overrides
last, so they win.

The run folder is verl's ``trainer.default_local_dir`` (made absolute, since
Ray workers do not share the launcher's working directory): verl writes its
checkpoints there, and ``awm train run`` writes the run's merged agent-loop
config there as ``agent_loop.yaml``, so the loop settings a checkpoint was
trained with sit next to it. On several machines that folder must be on a
filesystem every node mounts at the same path (verl's agent-loop workers read
the file on whichever node they run).
"""

from __future__ import annotations

import importlib.resources
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.errors import AWMError

if TYPE_CHECKING:
    from awm_train.safety import PerturbationMix, TaskFilter

__all__ = [
    "JUDGE_MODEL_ENV",
    "Recipe",
    "RecipeError",
    "agent_loop_config",
    "list_recipes",
    "load_recipe",
    "recipes_dir",
]

AGENT_LOOP_FILE = "agent_loop.yaml"
AGENT_NAME = "awm_agent"
JUDGE_MODEL_ENV = "AWM_JUDGE_MODEL"
"""Where awm-verify's LLM judges read their model (``openai:gpt-4o``) when none is passed."""
_JUDGES_WITH_A_MODEL = ("llm", "code+llm")
_RUN_DIR_KEY = "trainer.default_local_dir"
_LOOP_PATH_KEY = "actor_rollout_ref.rollout.agent.agent_loop_config_path"
_MAX_EXTENDS = 8


class RecipeError(AWMError):
    """A recipe is missing or malformed."""


def recipes_dir() -> Path:
    """The recipes folder: inside the installed wheel, or ``packages/awm-train/recipes`` in a checkout."""
    packaged = Path(str(importlib.resources.files("awm_train"))) / "recipes"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "recipes"


def agent_loop_config() -> Path:
    """The shipped agent-loop file (registers ``awm_agent`` with its default settings)."""
    return recipes_dir() / AGENT_LOOP_FILE


def list_recipes() -> list[str]:
    return sorted(p.stem for p in recipes_dir().glob("*.yaml") if p.name != AGENT_LOOP_FILE)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``, mappings merged key by key (``ray_options``, ``checks``)."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    requires: str
    model: str
    overrides: list[str]
    env: dict[str, str] = field(default_factory=dict)  # set for verl unless already set
    agent_loop: dict[str, Any] = field(default_factory=dict)  # over agent_loop.yaml's entry
    perturbations: dict[str, Any] = field(default_factory=dict)  # for awm train prepare --recipe
    tasks: dict[str, Any] = field(default_factory=dict)  # tag filter for awm train prepare --recipe

    def perturbation_mix(self) -> PerturbationMix:
        """The recipe's ``perturbations:`` (every name checked against the registry)."""
        from awm_train.safety import PerturbationMix

        return PerturbationMix.from_spec(self.perturbations)

    def task_filter(self) -> TaskFilter:
        """The recipe's ``tasks:`` filter."""
        from awm_train.safety import TaskFilter

        return TaskFilter.from_spec(self.tasks)

    def value(self, key: str, extra: list[str] | None = None) -> str | None:
        """The value Hydra will give ``key``: the last override naming it (the user's win)."""
        found = None
        for override in [*self.overrides, *(extra or [])]:
            if "=" in override and _override_key(override) == key:
                found = override.split("=", 1)[1]
        return found

    def run_dir(self, extra: list[str] | None = None, *, cwd: Path | None = None) -> Path:
        """The run folder, absolute: ``trainer.default_local_dir``, else ``checkpoints/NAME``.

        Raises :class:`RecipeError` for an interpolated value (``${trainer...}``):
        awm writes the run's agent-loop file there before verl resolves anything.
        """
        value = self.value(_RUN_DIR_KEY, extra)
        if value is not None and "${" in value:
            raise RecipeError(
                f"{_RUN_DIR_KEY}={value}: awm train run needs a plain path there (it writes "
                "the run's agent-loop config into it); pass one, e.g. "
                f"{_RUN_DIR_KEY}=checkpoints/{self.name}"
            )
        path = Path(value).expanduser() if value else Path("checkpoints") / self.name
        return path if path.is_absolute() else (cwd or Path.cwd()) / path

    def agent_loop_entry(self) -> dict[str, Any]:
        """The run's ``awm_agent`` settings: the shipped entry with the recipe's ``agent_loop`` over it."""
        import yaml

        entries = yaml.safe_load(agent_loop_config().read_text(encoding="utf-8")) or []
        shipped = next((e for e in entries if e.get("name") == AGENT_NAME), None)
        if shipped is None:  # pragma: no cover - the shipped file is tested
            raise RecipeError(f"{agent_loop_config()} has no {AGENT_NAME!r} entry")
        return _merge(shipped, self.agent_loop)

    def uses_own_agent_loop_file(self, extra: list[str] | None = None) -> bool:
        """Whether the user's overrides name their own agent-loop file (then awm writes none)."""
        return any("=" in o and _override_key(o) == _LOOP_PATH_KEY for o in extra or [])

    def missing_judge_model(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why the run's judge cannot work here, or None: an LLM judge without ``AWM_JUDGE_MODEL``."""
        environ = os.environ if environ is None else environ
        judge = str(self.agent_loop_entry().get("judge", ""))
        if judge in _JUDGES_WITH_A_MODEL and not environ.get(JUDGE_MODEL_ENV):
            return (
                f"recipe {self.name!r} judges with {judge!r}, which needs a judge model: set "
                f"{JUDGE_MODEL_ENV} (e.g. {JUDGE_MODEL_ENV}=openai:gpt-4o, with that "
                "provider's key; on a Ray cluster, on every node before `ray start`), or "
                "choose the code judge with a recipe whose agent_loop has judge: code"
            )
        return None

    def write_agent_loop(self, directory: Path) -> Path:
        """Write the run's agent-loop file (verl's ``agent_loop_config_path``) into ``directory``."""
        import yaml

        directory.mkdir(parents=True, exist_ok=True)
        path = directory / AGENT_LOOP_FILE
        header = (
            f"# awm_agent settings of this run: {agent_loop_config().name} with recipe "
            f"{self.name!r}'s agent_loop over it (written by awm train run)\n"
        )
        body = yaml.safe_dump([self.agent_loop_entry()], sort_keys=False)
        path.write_text(header + body, encoding="utf-8")
        return path

    def command(
        self,
        data: Path,
        *,
        model: str | None = None,
        extra: list[str] | None = None,
        python: str = sys.executable,
        agent_loop_path: Path | None = None,
        run_dir: Path | None = None,
    ) -> list[str]:
        """The ``python -m verl.trainer.main_ppo ...`` command line for this recipe.

        ``agent_loop_path`` defaults to the shipped ``agent_loop.yaml``; given
        ``run_dir`` (see :meth:`run_dir`), it ends the line as
        ``trainer.default_local_dir`` (the user's value, made absolute).
        """
        data = data.resolve()
        base = [
            f"data.train_files={data / 'train.parquet'}",
            f"data.val_files={data / 'val.parquet'}",
            f"actor_rollout_ref.model.path={model or self.model}",
            f"{_LOOP_PATH_KEY}={agent_loop_path or agent_loop_config()}",
            f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        ]
        tail = [f"{_RUN_DIR_KEY}={run_dir}"] if run_dir is not None else []
        return [
            python,
            "-m",
            "verl.trainer.main_ppo",
            *self.overrides,
            *base,
            *(extra or []),
            *tail,
        ]


def _read(path: Path) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a YAML mapping")
    overrides = data.get("overrides", [] if data.get("extends") else None)
    if not isinstance(overrides, list):
        raise RecipeError(f"{path}: a recipe needs an 'overrides' list")
    bad = [o for o in overrides if not isinstance(o, str) or "=" not in o]
    if bad:
        raise RecipeError(f"{path}: overrides must be 'key=value' strings, not {bad[:3]}")
    loop = data.get("agent_loop") or {}
    if not isinstance(loop, dict):
        raise RecipeError(f"{path}: agent_loop must be a mapping of awm_agent settings")
    if "name" in loop:
        raise RecipeError(f"{path}: agent_loop cannot rename the loop (it is {AGENT_NAME!r})")
    for key in ("perturbations", "tasks"):
        if not isinstance(data.get(key) or {}, dict):
            raise RecipeError(f"{path}: {key} must be a mapping (docs/training.md)")
    return data


def _find(name_or_path: str, near: Path | None = None) -> Path:
    for path in (
        Path(name_or_path),
        *([near / name_or_path] if near else []),
        recipes_dir() / f"{name_or_path}.yaml",
    ):
        if path.is_file() and path.name != AGENT_LOOP_FILE:
            return path
    raise RecipeError(
        f"no recipe {name_or_path!r}; known: {', '.join(list_recipes())} (or a YAML path)"
    )


def load_recipe(name_or_path: str) -> Recipe:
    """A recipe by name (``paper``) or by YAML path, with its ``extends`` chain applied."""
    path = _find(name_or_path)
    chain = [(path, _read(path))]
    while chain[-1][1].get("extends"):
        if len(chain) > _MAX_EXTENDS:
            raise RecipeError(f"{path}: 'extends' goes more than {_MAX_EXTENDS} recipes deep")
        parent = _find(str(chain[-1][1]["extends"]), near=chain[-1][0].parent)
        chain.append((parent, _read(parent)))
    overrides: list[str] = []
    env: dict[str, str] = {}
    loop: dict[str, Any] = {}
    fields: dict[str, str] = {}
    mixed: dict[str, dict[str, Any]] = {"perturbations": {}, "tasks": {}}
    for _, data in reversed(chain):  # the base first, so the named recipe wins
        overrides += data.get("overrides") or []
        for key in mixed:  # a recipe's own perturbations / tasks replace its base's whole
            if key in data:
                mixed[key] = dict(data[key] or {})
        env.update({str(k): str(v) for k, v in (data.get("env") or {}).items()})
        loop = _merge(loop, data.get("agent_loop") or {})
        for key in ("description", "requires", "model"):
            if data.get(key):
                fields[key] = str(data[key])
    return Recipe(
        name=path.stem,
        description=fields.get("description", ""),
        requires=fields.get("requires", ""),
        model=fields.get("model", ""),
        overrides=overrides,
        env=env,
        agent_loop=loop,
        perturbations=mixed["perturbations"],
        tasks=mixed["tasks"],
    )
