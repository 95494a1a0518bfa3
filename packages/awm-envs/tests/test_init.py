"""``awm envs init NAME``: the scaffolded bundle is complete and valid as generated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_envs import load_bundle
from awm_envs.bundle.toolspecs import derive_tool_specs
from awm_envs.scaffold import ScaffoldError, init_bundle

FILES = [
    "app.py",
    "manifest.json",
    "schema.sql",
    "seed.sql",
    "tasks.json",
    "tools.json",
    "verifiers.py",
]


def test_init_writes_a_bundle_that_loads(tmp_path: Path) -> None:
    path = init_bundle("my-todo", tmp_path / "my-todo")

    assert sorted(p.name for p in path.iterdir()) == FILES
    bundle = load_bundle(path)
    assert bundle.manifest.id == "my-todo" and bundle.manifest.name == "My Todo"
    assert {t.name for t in bundle.tools} == {
        "get_current_time",
        "list_items",
        "add_item",
        "complete_item",
    }
    assert all(t.reference_solution and t.verifier for t in bundle.tasks)


def test_the_tool_file_matches_the_apps_routes(tmp_path: Path) -> None:
    path = init_bundle("todo", tmp_path / "todo")
    written = json.loads((path / "tools.json").read_text())
    derived = [t.model_dump(mode="json") for t in derive_tool_specs(load_bundle(path).app)]
    assert written == derived


def test_init_defaults_to_a_folder_named_after_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert init_bundle("notes") == Path("notes") and (tmp_path / "notes" / "app.py").is_file()


@pytest.mark.parametrize("name", ["My Env", "Shop", "-x", "", "a/b"])
def test_init_refuses_a_name_that_is_not_an_environment_id(name: str, tmp_path: Path) -> None:
    with pytest.raises(ScaffoldError, match="invalid environment name"):
        init_bundle(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_init_refuses_a_folder_in_use_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "todo"
    target.mkdir()
    (target / "notes.txt").write_text("mine")

    with pytest.raises(ScaffoldError, match="not empty"):
        init_bundle("todo", target)
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]

    init_bundle("todo", target, force=True)
    assert (target / "notes.txt").read_text() == "mine" and (target / "app.py").is_file()


def test_cli_init_prints_json_and_errors(tmp_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(
        build_cli(), ["envs", "init", "todo", "--dir", str(tmp_path / "t"), "--json"]
    )
    assert made.exit_code == 0, made.output
    assert json.loads(made.output) == {
        "env_id": "todo",
        "path": str(tmp_path / "t"),
        "files": FILES,
    }
    again = runner.invoke(build_cli(), ["envs", "init", "todo", "--dir", str(tmp_path / "t")])
    assert again.exit_code == 1 and "not empty" in again.output and "Traceback" not in again.output


@pytest.mark.slow
def test_init_then_validate_proves_every_task(tmp_path: Path) -> None:
    """The documented path, as commands: ``awm envs init`` then ``awm envs validate``."""
    env = {**os.environ, "AWM_CACHE_DIR": str(tmp_path / "cache")}
    awm = [sys.executable, "-m", "awm_core.cli"]
    init = subprocess.run(
        [*awm, "envs", "init", "my-todo"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert init.returncode == 0, init.stderr
    done = subprocess.run(
        [*awm, "envs", "validate", "my-todo", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [result] = json.loads(done.stdout)
    assert result["passed"] and len(result["tasks"]) == 2
    assert all(t["proof"] == "proven" for t in result["tasks"])
