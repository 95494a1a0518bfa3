"""Shared fixtures for awm-core tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _run_awm(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "awm_core.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def run_awm():
    """Run the real ``awm`` CLI in a fresh interpreter (plugins load once per process)."""
    return _run_awm


@pytest.fixture
def fake_dist(tmp_path: Path):
    """Make an importable plugin distribution on a temporary path, no install needed.

    importlib.metadata finds ``*.dist-info`` folders on ``sys.path``, so a module
    plus a dist-info with an ``entry_points.txt`` is a real installed plugin for a
    subprocess whose PYTHONPATH includes ``tmp_path``.
    """

    def make(dist: str, module: str, source: str, entry_name: str | None = None) -> dict[str, str]:
        (tmp_path / f"{module}.py").write_text(source)
        info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[awm]\n{entry_name or dist} = {module}\n")
        path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
        return {"PYTHONPATH": path}

    return make
