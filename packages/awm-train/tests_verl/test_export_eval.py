"""Checkpoint -> model -> evaluation: ``awm train export`` on a real verl run, then ``awm bench``.

The cpu-smoke run of conftest.py saves verl checkpoints; the export merges one
with verl's own FSDP merger into a Hugging Face folder, which transformers, awm's
``local:MODEL_DIR`` backend, ``awm serve-llm`` and two benchmarks (BFCLv3 and awm's
own tasks) then use. The model is random, so it scores ~0: these tests are of the
path, not of the score. BFCLv3's package pins numpy 1.x and verl needs 2.x, so the
benchmarks run from an evaluation venv built here with uv (seconds from a warm
cache), as they would on an evaluation machine without verl.

The error paths need no verl run: they are checked on folder layouts made to fail.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from awm_train.export import (
    ActorShardsMissingError,
    ExportTargetExistsError,
    NoSuchRunError,
    NoSuchStepError,
    export_checkpoint,
    find_actor_checkpoint,
)

pytestmark = pytest.mark.timeout(1800)

ROOT = Path(__file__).resolve().parents[3]
AWM = str(Path(sys.executable).with_name("awm"))


# ------------------------------------------------------------------ error paths (no verl run)


def _step(run: Path, step: int) -> Path:
    actor = run / f"global_step_{step}" / "actor"
    actor.mkdir(parents=True)
    return actor


def test_a_folder_that_does_not_exist_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(NoSuchRunError, match="trainer.default_local_dir"):
        find_actor_checkpoint(tmp_path / "nope")


def test_a_run_without_checkpoints_points_at_save_freq(tmp_path: Path) -> None:
    with pytest.raises(NoSuchStepError, match="trainer.save_freq") as err:
        find_actor_checkpoint(tmp_path)
    assert err.value.available == []


def test_an_unsaved_step_lists_the_steps_that_exist(tmp_path: Path) -> None:
    for step in (3, 1, 10):
        _step(tmp_path, step)
    with pytest.raises(NoSuchStepError, match="steps saved: 1, 3, 10") as err:
        find_actor_checkpoint(tmp_path, 2)
    assert err.value.available == [1, 3, 10]


def test_the_tracker_naming_a_deleted_step_is_an_error_not_another_step(tmp_path: Path) -> None:
    _step(tmp_path, 1)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("4")
    with pytest.raises(NoSuchStepError, match="no checkpoint of step 4"):
        find_actor_checkpoint(tmp_path)


def test_a_step_without_actor_shards(tmp_path: Path) -> None:
    actor = _step(tmp_path, 5)
    (actor / "huggingface").mkdir()
    (actor / "huggingface" / "config.json").write_text("{}")
    with pytest.raises(ActorShardsMissingError, match="no FSDP model shards"):
        find_actor_checkpoint(tmp_path, 5)
    shutil.rmtree(actor)
    with pytest.raises(ActorShardsMissingError, match="no actor/"):
        find_actor_checkpoint(tmp_path, 5)


def test_a_partial_save_names_the_missing_ranks(tmp_path: Path) -> None:
    actor = _step(tmp_path, 2)
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": 4}))
    for rank in (0, 2):
        (actor / f"model_world_size_4_rank_{rank}.pt").write_bytes(b"x")
    with pytest.raises(ActorShardsMissingError, match=r"rank\(s\) \[1, 3\] of 4"):
        find_actor_checkpoint(tmp_path, 2)


def test_a_megatron_checkpoint_is_named_as_such(tmp_path: Path) -> None:
    actor = _step(tmp_path, 1)
    (actor / "model" / "dist_ckpt").mkdir(parents=True)
    with pytest.raises(ActorShardsMissingError, match="Megatron"):
        find_actor_checkpoint(tmp_path)


def test_the_cli_says_what_is_wrong_in_one_line(tmp_path: Path) -> None:
    _step(tmp_path, 1)
    out = subprocess.run(
        [AWM, "train", "export", str(tmp_path), "--step", "7", "--out", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("error: "), out.stderr
    assert "steps saved: 1" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------ the real run


@pytest.fixture(scope="module")
def checkpoints(run: subprocess.CompletedProcess[str], cpu_smoke_dir: Path) -> Path:
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-6000:]
    return cpu_smoke_dir / "ckpt"


@pytest.fixture(scope="module")
def exported(checkpoints: Path, cpu_smoke_dir: Path) -> dict[str, Any]:
    """``awm train export RUN --out MODEL --json`` with the step left to the tracker."""
    out = cpu_smoke_dir / "exported"
    started = time.perf_counter()
    done = subprocess.run(
        [AWM, "train", "export", str(checkpoints), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)  # verl's own prints went to stderr
    print(f"export: {result['seconds']:.1f} s merging, {wall:.1f} s with the CLI's start-up")
    return result


def test_the_run_saved_a_checkpoint_per_step(checkpoints: Path) -> None:
    assert (checkpoints / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    assert find_actor_checkpoint(checkpoints, 1).step == 1
    latest = find_actor_checkpoint(checkpoints)
    assert (latest.step, latest.world_size) == (2, 1)


def test_export_writes_a_hugging_face_folder_with_its_tokenizer(
    exported: dict[str, Any], checkpoints: Path
) -> None:
    out = Path(exported["out"])
    assert exported["step"] == 2 and exported["lora_adapter"] is None
    assert exported["model_spec"] == f"local:{out}"
    files = set(exported["files"])
    assert {"config.json", "model.safetensors", "tokenizer_config.json", "awm-export.json"} <= files
    assert files == {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    provenance = json.loads((out / "awm-export.json").read_text())
    assert provenance["step"] == 2 and provenance["run"] == str(checkpoints.resolve())
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".exported.export-")]


def test_the_exported_weights_are_the_checkpoints_and_load_with_transformers(
    exported: dict[str, Any], cpu_smoke_dir: Path
) -> None:
    """Every tensor sits under its own name: within bf16 rounding of the starting weights.

    The random policy scores -1 on every rollout, so GRPO's advantages (and updates) are 0:
    the trained weights stay where they started, which makes the merge checkable tensor by
    tensor against the model the run began from.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(exported["out"])
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    start = AutoModelForCausalLM.from_pretrained(cpu_smoke_dir / "model", dtype=torch.float32)
    trained, initial = model.state_dict(), start.state_dict()
    assert trained.keys() == initial.keys()
    for name, tensor in initial.items():
        expected = tensor.to(torch.bfloat16).float()
        torch.testing.assert_close(trained[name], expected, atol=1e-4, rtol=1e-2, msg=name)
    tokenizer = AutoTokenizer.from_pretrained(out)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt.rstrip().endswith("<|im_start|>assistant")
    assert len(tokenizer) == model.config.vocab_size


def test_an_earlier_step_exports_too_and_an_occupied_out_is_refused(
    checkpoints: Path, exported: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ExportTargetExistsError, match="--force"):
        export_checkpoint(checkpoints, Path(exported["out"]), step=1)
    first = export_checkpoint(checkpoints, tmp_path / "step1", step=1)
    assert first.step == 1 and (first.out / "model.safetensors").is_file()


async def test_the_local_backend_answers_with_the_exported_model(
    exported: dict[str, Any],
) -> None:
    from awm_core import get_backend
    from awm_core.models import Message

    backend = get_backend(exported["model_spec"], max_new_tokens=8)
    response = await backend.chat([Message(role="user", content="Say hello.")])
    assert 0 < response.usage.completion_tokens <= 8
    assert response.model == exported["model_spec"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(exported: dict[str, Any]) -> Iterator[str]:
    """``awm serve-llm -m local:MODEL_DIR``: the base URL once /v1/models answers."""
    port = _free_port()
    proc = subprocess.Popen(
        [AWM, "serve-llm", "-m", exported["model_spec"], "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "awm serve-llm never answered"
            time.sleep(1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_llm_serves_the_exported_model(served: str, exported: dict[str, Any]) -> None:
    body = {
        "model": exported["model_spec"],
        "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 8,
    }
    request = urllib.request.Request(
        f"{served}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer = json.loads(reply.read())
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert 0 < answer["usage"]["completion_tokens"] <= 8


# ------------------------------------------------------------------ evaluation (awm bench)


@pytest.fixture(scope="module")
def eval_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with awm-bench[bfcl] and this venv's torch build, but no verl; its bin folder."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("the evaluation venv is built with uv: put uv on PATH (`. ./uv-env.sh`)")
    venv = tmp_path_factory.mktemp("eval") / "venv"
    python = venv / "bin" / "python"
    steps = [
        [uv, "venv", "-q", "-p", sys.executable, str(venv)],
        # this venv's exact torch build first, so the resolver never reaches for another one
        [uv, "pip", "install", "-q", "-p", str(python), f"torch=={version('torch')}"],
        [
            uv,
            "pip",
            "install",
            "-q",
            "-p",
            str(python),
            f"torch=={version('torch')}",
            *("-e", "packages/awm-core[local]", "-e", "packages/awm-envs"),
            *("-e", "packages/awm-verify", "-e", "packages/awm-synth"),
            *("-e", "packages/awm-bench[bfcl]"),
        ],
    ]
    started = time.perf_counter()
    for step in steps:
        done = subprocess.run(step, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-4000:]
    print(f"evaluation venv: {time.perf_counter() - started:.1f} s")
    return venv / "bin"


def _bench(
    eval_bin: Path, name: str, model: str, subset: list[str], results: Path
) -> tuple[dict[str, Any], Path, float]:
    """``awm bench run NAME --model MODEL`` on a tiny subset; its summary, folder and wall time."""
    env = {**os.environ, "AWM_CACHE_DIR": str(results / "cache"), "AWM_LOCAL_THREADS": "1"}
    env["BFCL_PROJECT_ROOT"] = str(results / "bfcl")
    started = time.perf_counter()
    done = subprocess.run(
        [str(eval_bin / "awm"), "bench", "run", name, "--model", model, *subset]
        + ["--max-steps", "2", "--results", str(results), "--run", "exported", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    wall = time.perf_counter() - started
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    summary: dict[str, Any] = json.loads(done.stdout)[name]
    return summary, results / "exported" / name, wall


def test_bfcl_evaluates_the_exported_model(
    eval_bin: Path, exported: dict[str, Any], tmp_path: Path
) -> None:
    model = exported["model_spec"]
    summary, folder, wall = _bench(
        eval_bin, "bfcl", model, ["--limit", "1", "--only", "simple"], tmp_path
    )
    assert summary["model"] == model
    for mode in ("awm", "native"):
        assert summary["modes"][mode]["cases"] == 1, summary
    (run_dir,) = folder.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["model"] == model
    for mode in ("awm", "native"):
        (case,) = (run_dir / f"{mode}.jsonl").read_text().splitlines()
        assert json.loads(case)["category"] == "simple"
    assert (tmp_path / "exported" / "report.json").is_file()
    print(f"bfcl (1 simple case, awm + native modes): {wall:.1f} s")


def test_awm_tasks_evaluate_the_exported_model(
    eval_bin: Path, exported: dict[str, Any], tmp_path: Path
) -> None:
    model = exported["model_spec"]
    summary, folder, wall = _bench(
        eval_bin, "tasks", model, ["--limit", "1", "--only", "shop"], tmp_path
    )
    assert summary["model"] == model and summary["modes"]["awm"]["cases"] == 1, summary
    (run_dir,) = folder.iterdir()
    (record,) = (run_dir / "awm.jsonl").read_text().splitlines()  # one row per episode
    episode = json.loads(record)
    assert episode["env_id"] == "shop" and episode["policy"] and episode["steps"] <= 2, episode
    (trajectory,) = (run_dir / "trajectories.jsonl").read_text().splitlines()
    assert json.loads(trajectory)["metadata"]["model"] == model
    assert (tmp_path / "exported" / "report.json").is_file()
    print(f"awm tasks (1 shop task, up to 2 steps): {wall:.1f} s")
