"""A real third-party plugin, installed from its own package, shows up with no register() call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plugin_venv(
    wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory, make_venv, run, repo_root
) -> Path:
    bin_dir = make_venv(tmp_path_factory.mktemp("plugin") / "venv")
    core = next(str(p) for p in wheelhouse.glob("awm_core-*.whl"))
    example = str(repo_root / "examples" / "awm-plugin-example")
    out = run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", core, example])
    assert out.returncode == 0, out.stderr[-3000:]
    return bin_dir


def test_example_plugin_is_listed_with_its_hooks(plugin_venv: Path, run) -> None:
    out = run([str(plugin_venv / "awm"), "plugins", "--json"])
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    example = plugins["example"]
    assert example["package"] == "awm-plugin-example"
    assert example["version"] == "0.1.0"
    assert set(example["hooks"]) == {
        "register_llm_backends",
        "register_reward_functions",
        "register_commands",
    }
    assert example["registers"] == {"llm_backends": ["parrot"], "reward_functions": ["brevity"]}


def test_example_plugin_things_are_usable_by_name(plugin_venv: Path, run) -> None:
    code = """
import asyncio, json
from awm_core import Message, Trajectory
from awm_core import get_backend, get_reward_function
backend = get_backend("parrot:loud")
reply = asyncio.run(backend.chat([Message(role="user", content="hi there")]))
reward = get_reward_function("brevity")(None, Trajectory(env_id="e", task_id="t", final_answer="x" * 400))
print(json.dumps({"reply": reply.content, "reward": reward.value}))
"""
    out = run([str(plugin_venv / "python"), "-c", code])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"reply": "HI THERE", "reward": 0.5}


def test_example_plugin_adds_a_cli_command(plugin_venv: Path, run) -> None:
    out = run([str(plugin_venv / "awm"), "example-hello", "--name", "Ada"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello, Ada, from awm-plugin-example"
