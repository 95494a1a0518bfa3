"""Shared fixtures: one offline replay run, reused by the tests that only read its output."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awm_synth.config import SynthConfig
from awm_synth.pipeline import RunSummary, make_llm, prepare_run, run_pipeline
from awm_synth.store.checkpoint import RunDir


def run_replay(out: Path, **config: Any) -> RunSummary:
    """``awm synth all --backend replay`` in-process."""
    run_dir = RunDir(out)
    cfg = prepare_run(run_dir, SynthConfig(backend="replay", embedder="lexical", **config))
    llm = make_llm(cfg, run_dir)
    return asyncio.run(run_pipeline(run_dir, llm, cfg))


@pytest.fixture
def replay() -> Callable[..., RunSummary]:
    """The in-process ``synth all --backend replay`` function, for tests that run it again."""
    return run_replay


@pytest.fixture(scope="session")
def replay_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunSummary]:
    out = tmp_path_factory.mktemp("replay-run")
    return out, run_replay(out)
