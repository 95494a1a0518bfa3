"""A pytest plugin for plugin authors and awm's own tests.

``register_plugin(obj, name=None)`` registers a plugin for one test and removes it
afterwards, so tests never leak hook implementations into each other::

    def test_my_reward(register_plugin):
        class P:
            @hookimpl
            def register_reward_functions(self, register):
                register("double", lambda v, t: Reward(value=2.0))
        register_plugin(P())
        assert get_reward_function("double")(None, None).value == 2.0
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from awm_core.plugins import check, load_plugins, pm


@pytest.fixture(autouse=True)
def _runs_outside_the_checkout(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``awm run`` keeps every run under ``$AWM_RUNS`` (default ``./runs``): a test's runs
    go to a temporary folder, never into the working directory it was started from."""
    import os

    if "AWM_RUNS" not in os.environ:
        monkeypatch.setenv("AWM_RUNS", str(tmp_path_factory.mktemp("awm-runs")))


@pytest.fixture
def register_plugin() -> Iterator[Callable[..., object]]:
    load_plugins()
    added: list[object] = []

    def _register(plugin: object, name: str | None = None) -> object:
        pm.register(plugin, name=name)
        added.append(plugin)
        check()
        return plugin

    yield _register
    for plugin in reversed(added):
        if pm.is_registered(plugin):
            pm.unregister(plugin)


def wait_until(
    predicate: Callable[[], object],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str = "",
) -> None:
    """Poll ``predicate`` until it is true; fail after ``timeout`` seconds saying ``what``.

    Tests wait for a condition instead of sleeping a fixed time: a fixed sleep is
    too short on a busy runner and too long everywhere else. The timeout is a hang
    guard, far above the expected wait, never a performance bound.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"still not true after {timeout:g} s: {what or predicate!r}")
        time.sleep(interval)


def sigint_as_default() -> None:
    """A ``preexec_fn`` for a child that a test interrupts: SIGINT acts on it by default.

    Why: a shell that starts a command in the background (``ci/run &``, ``nohup``)
    starts it with SIGINT ignored, every process below inherits that, and Python
    then honours the ignore, so a Ctrl-C test's child exits 0 instead of 130
    (CI launched that way failed all three). ``subprocess.Popen(...,
    preexec_fn=sigint_as_default)`` gives the child the disposition of a
    terminal-started command.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


async def await_until(
    predicate: Callable[[], object],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str = "",
) -> None:
    """:func:`wait_until` for async tests: yields to the event loop between polls."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"still not true after {timeout:g} s: {what or predicate!r}")
        await asyncio.sleep(interval)


def venv_over_this_one(folder: Path) -> Path:
    """A fresh venv at ``folder`` that also sees this interpreter's packages; its python.

    For tests that install a third party's plugin the way its README says (``pip install
    -e .``) without touching the venv running the tests: the plugin lands in the new
    venv only, awm comes from this one (a ``.pth`` line adds its site-packages). Skips the
    test where uv is missing.
    """
    import shutil
    import subprocess
    import sys
    import sysconfig

    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed (. ./uv-env.sh installs it)")
    made = subprocess.run(
        [uv, "venv", "-q", "-p", sys.executable, str(folder)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    site = next((folder / "lib").glob("python*/site-packages"))
    workspace = sysconfig.get_paths()["purelib"]
    (site / "awm_workspace.pth").write_text(f"import site; site.addsitedir({workspace!r})\n")
    return folder / "bin" / "python"
