"""The ``lights`` training environment: found by id through awm-train's plugin, every task proven.

It is the environment of the ``cpu-learn`` learning curve, so a task that a wrong
answer also passes, or a verifier that rejects the reference, would make the
curve meaningless; ``awm envs validate`` checks both, as for the catalog.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from awm_envs import list_envs, load_environment, validate_environment
from awm_train import ENVS_DIR

TOOL = Path(__file__).resolve().parents[1] / "tools" / "make_lights.py"


def test_lights_is_found_by_id_from_the_training_source() -> None:
    found = {env_id: (source, path) for env_id, source, path in list_envs()}
    assert found["lights"] == ("training", ENVS_DIR / "lights")
    env = load_environment("lights")
    assert sorted(t.name for t in env.tools) == ["list_lights", "set_brightness", "switch_light"]
    assert len(env.tasks) == 40


def test_every_lights_task_is_proven() -> None:
    result = validate_environment("lights")
    assert result.passed
    assert sum(t.proven for t in result.tasks) == len(result.tasks) == 40


def test_tasks_json_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_lights", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_lights"] = module
    spec.loader.exec_module(module)
    shipped = json.loads((ENVS_DIR / "lights" / "tasks.json").read_text(encoding="utf-8"))
    generated = [task["id"] for task, _ in module.tasks()]
    assert [t["id"] for t in shipped] == generated
    assert all(t["verifier"] == f"verify_{t['id']}" for t in shipped)
