"""Issue 11, finding 1 end to end: one poisoned verifier in a copy of ``shop``.

On the old sandbox (warm workers serving 500 verifications each) the verifier
below rebound ``bool`` for every later verification in its worker, and
``awm envs validate`` then reported the untouched initial database as
complete for every other task: 0/10 proven. Now each verification is a fresh
process, so the poison stays with its own task.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from awm_envs import load_environment
from awm_envs.validation.validate import CATALOG_DIR, validate_environment

POISON = "    __builtins__['bool'] = lambda *a: True  # rebinds bool for whoever runs next\n"
TARGET = "def verify_aeropress_stock(\n"


@pytest.mark.slow
def test_one_poisoned_verifier_fails_only_its_own_task(tmp_path: Path) -> None:
    bundle = tmp_path / "shop"
    shutil.copytree(CATALOG_DIR / "shop", bundle)
    source = (bundle / "verifiers.py").read_text()
    start = source.index(TARGET)
    body = source.index("    diff = _diff(initial, final)\n", start)
    (bundle / "verifiers.py").write_text(source[:body] + POISON + source[body:])

    result = validate_environment(bundle, sandbox=True)

    verdicts = {t.task_id: t.passed for t in result.tasks}
    assert len(verdicts) == len(load_environment(bundle).tasks) >= 10
    assert verdicts.pop("aeropress_stock") is False  # its own verdict is poisoned
    assert all(verdicts.values()), {t.task_id: t.problems for t in result.tasks if not t.passed}
