"""Cross-package fixtures: built wheels and throwaway virtual environments."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# helpers shared by several test modules (attacks.py), importable without importing a test module
sys.path.insert(0, str(Path(__file__).parent))


def _uv() -> str:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    return uv


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels of awm-core and awm-envs built from this checkout with ``uv build``."""
    out = tmp_path_factory.mktemp("wheels")
    for package in ("awm-core", "awm-envs"):
        subprocess.run(
            [_uv(), "build", "--package", package, "--wheel", "--out-dir", str(out)],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=300,
        )
    return out


@pytest.fixture(scope="session")
def make_venv():
    """Factory for a fresh venv with pip; returns its bin directory."""
    return _make_venv


@pytest.fixture(scope="session")
def run():
    return _run


def _make_venv(path: Path) -> Path:
    """A fresh venv with pip; returns its bin directory."""
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / ("Scripts" if os.name == "nt" else "bin")


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
