"""docs/safety.md's perturbation plugin, installed from its own folder into a fresh venv, is
one more condition of ``awm bench safety``, run with the page's command as written.

The venv sees the workspace's awm packages through a ``.pth`` file (so nothing is built
or downloaded for them) and gets the plugin by ``uv pip install -e``, the way
docs/plugins.md installs one; the venv running these tests is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from awm_core.testing import venv_over_this_one

ROOT = Path(__file__).resolve().parents[3]
SAFETY_MD = ROOT / "docs" / "safety.md"


def _plugin_files(dest: Path) -> Path:
    """The page's plugin, its files named by each block's first comment line."""
    text = SAFETY_MD.read_text(encoding="utf-8")
    files = {}
    for body in re.findall(r"```(?:toml|python)\n(.*?)```", text, flags=re.S):
        first = body.splitlines()[0]
        if first.startswith("# ") and first[2:].strip().endswith((".toml", ".py")):
            files[first[2:].strip()] = body
    assert set(files) == {"pyproject.toml", "src/awm_shout/__init__.py"}, files
    for name, body in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(body, encoding="utf-8")
    return dest


def _documented_command() -> str:
    text = SAFETY_MD.read_text(encoding="utf-8")
    (block,) = re.findall(r"```bash\n(awm bench safety bank --perturbation shout[^\n]*)\n```", text)
    return block


@pytest.mark.slow
def test_the_documented_perturbation_plugin_is_picked_up_by_awm_bench_safety(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    venv_over_this_one(venv)
    uv = shutil.which("uv")
    assert uv is not None
    project = _plugin_files(tmp_path / "awm-shout")
    installed = subprocess.run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--python",
            str(venv / "bin" / "python"),
            "--no-deps",
            "-e",
            ".",
        ],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    awm = venv / "bin" / "awm"  # the console script lives in the workspace venv: one for this venv
    awm.write_text(f"#!{venv / 'bin' / 'python'}\nfrom awm_core.cli import main\nmain()\n")
    awm.chmod(0o755)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "run"
    command = f"{_documented_command()} --out {shlex.quote(str(out))} --json"
    done = subprocess.run(
        command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["conditions"]["shout"]["kind"] == "data"
    assert summary["by_condition"]["shout"]["episodes"] == 2
    rows = [json.loads(line) for line in (out / "safety.jsonl").read_text().splitlines()]
    shouted = [r for r in rows if r["perturbation"] == "shout"]
    assert [r["perturbation_record"]["task"] for r in shouted] == [r["task_id"] for r in shouted]
    trajectories = [
        json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()
    ]
    texts = [
        m["content"]
        for t in trajectories
        if t["metadata"]["run_key"].startswith("shout/")
        for m in t["messages"]
        if m["role"] == "tool"
    ]
    assert any("EVERYDAY CHECKING" in text for text in texts)
