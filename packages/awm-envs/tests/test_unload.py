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


def _copy(tmp_path: Path, env: str = "bank", *, unique: bool = False) -> Path:
    """A copy of catalog ``env``; ``unique``: its ``app.py`` differs from any other's.

    Modules are named by content, so a plain copy shares its module with the catalog
    bundle, which another test of this process may have loaded.
    """
    target = tmp_path / env
    shutil.copytree(CATALOG_DIR / env, target)
    if unique:
        with (target / "app.py").open("a", encoding="utf-8") as f:
            f.write(f"\n# {target}\n")
    return target


def test_unload_bundle_lets_the_app_be_collected(tmp_path: Path) -> None:
    bundle = load_bundle(_copy(tmp_path, unique=True))
    name = bundle.module.__name__
    app = weakref.ref(bundle.app)
    assert name in sys.modules
    unload_bundle(bundle)
    del bundle
    gc.collect()
    assert name not in sys.modules
    assert app() is None, "something still holds the unloaded app"


def test_unloading_a_copy_keeps_the_module_a_live_environment_shares(tmp_path: Path) -> None:
    """Same ``app.py``, same module: the copy's unload must not pull it from the live one."""
    live = load_environment(_copy(tmp_path / "live", unique=True))
    name = live.bundle.module.__name__
    copy = tmp_path / "copy"
    shutil.copytree(live.bundle.path, copy)
    twin = load_bundle(copy)
    assert twin.module is live.bundle.module
    unload_bundle(twin)
    assert sys.modules.get(name) is live.bundle.module  # pickling by name still finds it
    unload_environment(live.bundle.path)
    assert name not in sys.modules  # the last hold went with the environment


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
