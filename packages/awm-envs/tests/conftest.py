"""Fixtures: real bundles on disk, real SQLite, real worker processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# the performance tools (not part of the wheel): the raw MCP client and the bench bundle
sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))

from hostile import LIBRARY, make_hostile_bundle  # noqa: E402

from awm_envs import Environment, load_environment  # noqa: E402


@pytest.fixture(scope="session")
def library_path() -> Path:
    return LIBRARY


@pytest.fixture(scope="session")
def library_env(library_path: Path) -> Environment:
    return load_environment(library_path)


@pytest.fixture(scope="session")
def hostile_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_hostile_bundle(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="session")
def hostile_env(hostile_path: Path) -> Environment:
    return load_environment(hostile_path)
