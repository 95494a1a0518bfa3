"""A sandbox always gets its pids cgroup where the host offers them, whatever was left behind.

Found as root under load: cgroups of killed processes stay behind (5,476 here), pids are
reused (``pid_max`` 32,768), and a name made of the pid and a counter then already
existed, so ``create`` returned None and the new sandbox ran without a process bound.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from awm_envs.sandbox import cgroups
from awm_envs.sandbox.cgroups import PidsCgroup

parent = cgroups._parent()
pytestmark = pytest.mark.skipif(parent is None, reason="no pids cgroup can be made here")


def test_create_succeeds_although_this_pid_left_cgroups_behind() -> None:
    assert parent is not None
    # what an earlier process with this very pid would have left, under the old names
    stale = [parent / f"awm-sandbox-{os.getpid()}-{n}" for n in range(64)]
    for folder in stale:
        folder.mkdir(exist_ok=True)
    try:
        made = [PidsCgroup.create(16) for _ in range(8)]
        assert all(m is not None for m in made)
        for m in made:
            assert m is not None and (m.folder / "pids.max").read_text().strip() == "16"
            m.remove()
    finally:
        for folder in stale:
            folder.rmdir()


def test_empty_cgroups_of_dead_processes_are_swept_live_ones_kept() -> None:
    assert parent is not None
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    gone = parent / f"awm-sandbox-{dead.stdout.strip()}-0-feedbeef"
    mine = parent / f"awm-sandbox-{os.getpid()}-999-feedbeef"
    gone.mkdir()
    mine.mkdir()
    try:
        cgroups._sweep_once.cache_clear()
        made = PidsCgroup.create(16)
        assert made is not None
        made.remove()
        assert not gone.exists(), "an empty cgroup of a dead process was left"
        assert mine.exists(), "a live process's cgroup was removed"
    finally:
        for folder in (gone, mine):
            if folder.exists():
                folder.rmdir()
