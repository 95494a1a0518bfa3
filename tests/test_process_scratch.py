"""Per-process scratch folders leave nothing behind: not at import, not after exit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter whose temporary folder is ``tmp_path``."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_folder_is_private_reused_and_gone_after_exit(tmp_path: Path) -> None:
    done = _run(
        """
        import os, stat
        from awm_core.paths import process_scratch
        a = process_scratch("awm-test-")
        assert process_scratch("awm-test-") == a, "a second call made a second folder"
        assert process_scratch("awm-other-") != a
        (a / "file.txt").write_text("x")
        assert stat.S_IMODE(os.stat(a).st_mode) == 0o700
        print(a)
        """,
        tmp_path,
    )
    folder = Path(done.stdout.strip())
    assert folder.parent == tmp_path
    assert not folder.exists(), "the scratch folder outlived its process"
    assert list(tmp_path.iterdir()) == [], "another scratch folder was left behind"


def test_a_forked_child_gets_its_own_folder_and_leaves_the_parent_s(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    done = _run(
        """
        import os, sys
        from awm_core.paths import process_scratch
        parent = process_scratch("awm-test-")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, str(process_scratch("awm-test-")).encode())
            sys.exit(0)  # runs the atexit handlers inherited from the parent
        os.waitpid(pid, 0)
        child = os.read(r, 4096).decode()
        assert child != str(parent), "the child shared its parent's folder"
        assert parent.is_dir(), "the child's exit removed its parent's folder"
        print(child)
        """,
        tmp_path,
    )
    assert not Path(done.stdout.strip()).exists(), "the child's folder outlived the child"
    assert list(tmp_path.iterdir()) == [], "the parent's folder outlived the parent"


@pytest.mark.parametrize(
    "module", ["awm_synth.checks.apprunner", "awm_bench.bfcl.scoring", "awm_envs.pool.ray_backend"]
)
def test_importing_a_module_that_uses_scratch_makes_no_folder(module: str, tmp_path: Path) -> None:
    _run(f"import {module}", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_synthesis_checks_leave_no_folder_after_importing_an_app(tmp_path: Path) -> None:
    _run(
        """
        from awm_synth.checks.apprunner import import_source
        module = import_source("from fastapi import FastAPI\\napp = FastAPI()\\n")
        assert module.app is not None
        """,
        tmp_path,
    )
    assert list(tmp_path.iterdir()) == []
