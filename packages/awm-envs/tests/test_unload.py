"""A process that goes through many bundles once each lets each go after it.

Validation of an imported AWM-1K release loads 1,000 generated apps one after another; an
import worker loads hundreds. Each app kept would cost 2 to 3 MiB for the rest of the run.
"""

from __future__ import annotations

import gc
import shutil
import sys
import weakref
from pathlib import Path

from awm_envs import load_environment
from awm_envs.bundle.loader import load_bundle, unload_bundle
from awm_envs.bundle.sources import CATALOG_DIR
from awm_envs.runtime.environment import is_cached, unload_environment
from awm_envs.validation.validate import validate_environment


def _copy(tmp_path: Path, env: str = "bank") -> Path:
    target = tmp_path / env
    shutil.copytree(CATALOG_DIR / env, target)
    return target


def test_unload_bundle_lets_the_app_be_collected(tmp_path: Path) -> None:
    bundle = load_bundle(_copy(tmp_path))
    name = bundle.module.__name__
    app = weakref.ref(bundle.app)
    assert name in sys.modules
    unload_bundle(bundle)
    del bundle
    gc.collect()
    assert name not in sys.modules
    assert app() is None, "something still holds the unloaded app"


def test_validation_forgets_a_bundle_it_loaded_and_keeps_one_the_caller_loaded(
    tmp_path: Path,
) -> None:
    fresh = _copy(tmp_path, "bank")
    result = validate_environment(fresh, task_ids=["checking_balance"], sandbox=False)
    assert result.passed, result
    assert not is_cached(fresh)
    imported = {str(getattr(m, "__file__", "")) for m in list(sys.modules.values())}
    assert str(fresh.resolve() / "app.py") not in imported

    held = _copy(tmp_path / "held", "bank")
    env = load_environment(held)
    app = weakref.ref(env.bundle.app)
    assert validate_environment(held, task_ids=["checking_balance"], sandbox=False).passed
    assert is_cached(held) and app() is not None  # the caller's environment is untouched
    unload_environment(held)
    assert not is_cached(held)
    assert load_environment(held) is not env  # loaded afresh
