"""A benchmark venv that is named but broken fails its tests; it never turns them into skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_a_broken_mcpuniverse_venv_fails_the_mcpu_tests(tmp_path: Path) -> None:
    broken = tmp_path / "venv" / "bin" / "python"  # named, but nothing is there
    env = {**os.environ, "AWM_MCPU_PYTHON": str(broken)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         str(PACKAGE / "tests_mcpu"), "-k", "oracle", "-o", "testpaths="],
        cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "MCP-Universe cannot be driven" in out
    assert " skipped" not in out.splitlines()[-1], out.splitlines()[-1]
