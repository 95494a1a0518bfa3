"""A run killed with SIGKILL resumes to identical artifacts without repeating an answered request.

The LLM is a real OpenAI-protocol HTTP server on 127.0.0.1 answering from the
replay recordings; the pipeline reaches it through the ``openai:`` backend in
a real subprocess, which is killed mid-run.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_synth.config import SynthConfig
from awm_synth.llm.replay import replay_responder
from awm_synth.llm.tags import key_from_messages
from awm_synth.pipeline import make_llm, prepare_run, run_pipeline
from awm_synth.store.checkpoint import RunDir

pytestmark = pytest.mark.slow


def _tags(requests: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    out = []
    for body in requests:
        key = key_from_messages(body["messages"])
        assert key is not None
        out.append((key.stage, key.scenario, key.attempt))
    return out


def _cached_tags(cache: Path) -> set[tuple[str, str, int]]:
    tags = set()
    for path in cache.glob("*/*.json"):
        meta = json.loads(path.read_text())["meta"]
        tags.add((meta["stage"], meta["scenario"], meta["attempt"]))
    return tags


def _synth(out: Path, base_url: str) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "awm_core.cli",
        "synth",
        "all",
        "--backend",
        "openai:replay",
        "--base-url",
        base_url,
        "--out",
        str(out),
        "--concurrency",
        "2",
        "--embedder",
        "lexical",
        "--json",
    ]
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_sigkill_then_resume(tmp_path: Path) -> None:
    killed_dir = tmp_path / "killed"
    with ScriptedOpenAIServer(replay_responder(), latency_s=0.25, model="replay") as server:
        proc = _synth(killed_dir, server.base_url)
        deadline = time.monotonic() + 120
        while server.request_count < 12 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        first = _tags(server.requests)
        cached = _cached_tags(killed_dir / "cache")
        assert 0 < len(cached) < 27
        # A kill mid-write may leave a stray ``.tmp-*`` file (the atomic writer's contract);
        # plant torn ones beside real cache entries and bundles: the resume must never read them.
        entry = next((killed_dir / "cache").glob("*/*.json"))
        (entry.parent / f".tmp-{entry.name}-torn").write_text('{"meta": {"stage": "torn"')
        (killed_dir / "bundles").mkdir(exist_ok=True)
        (killed_dir / "bundles" / ".tmp-torn").mkdir()

        proc = _synth(killed_dir, server.base_url)
        stdout, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr.decode()[-2000:]
        second = _tags(server.requests[len(first) :])

    # Nothing answered and cached before the kill was asked again.
    assert not (set(second) & cached)
    assert len(second) == len(set(second))
    summary = json.loads(stdout)
    assert sum(e["status"] == "shipped" for e in summary["environments"]) == 3

    # An uninterrupted run against the same server gives byte-identical bundles.
    clean_dir = tmp_path / "clean"
    with ScriptedOpenAIServer(replay_responder(), model="replay") as server:
        run_dir = RunDir(clean_dir)
        config = prepare_run(
            run_dir, SynthConfig(backend="openai:replay", embedder="lexical", concurrency=2)
        )
        llm = make_llm(config, run_dir, base_url=server.base_url, api_key="test-key")
        asyncio.run(run_pipeline(run_dir, llm, config))
        total = server.request_count
    assert (
        len(set(first) | set(second)) == total
    )  # every request was made once, except in-flight ones at the kill
    resumed = {k: v for k, v in _files(killed_dir / "bundles").items() if ".tmp-" not in k}
    assert resumed == _files(clean_dir / "bundles")
