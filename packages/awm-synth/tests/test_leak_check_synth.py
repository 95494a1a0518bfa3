"""The package stage rejects a generated app that keeps state in module-level globals.

In-process, every instance of an environment shares one imported ``app.py``,
so a global dict a tool writes leaks from one episode into every other. The
runtime's validator catches it (``awm envs validate``); synthesis gets the
same verdict from :func:`awm_synth.checks.isolated.bundle_problems`, run in a
sandboxed child by :meth:`awm_synth.checks.sandbox.CheckSandbox.bundle_problems`
(the pipeline's package stage), or in-process on ``--trusted`` runs through
:func:`awm_synth.store.bundle.runtime_problems`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from awm_envs.validation.validate import LEAK_PHRASE
from awm_synth.checks.isolated import bundle_problems
from awm_synth.store.bundle import runtime_problems

LIBRARY = Path(__file__).resolve().parents[2] / "awm-envs" / "tests" / "fixtures" / "library"
CHECKOUT_LINE = '    copy.status = "on_loan"\n'


def _leaky_bundle(root: Path) -> Path:
    """The awm-envs library fixture, with checkout_copy also counting checkouts in a global dict."""
    bundle = root / "library"
    shutil.copytree(LIBRARY, bundle)
    app = (bundle / "app.py").read_text()
    assert CHECKOUT_LINE in app
    app = app.replace("app = FastAPI(", "_CHECKOUTS: dict[int, int] = {}\n\napp = FastAPI(", 1)
    app = app.replace(
        CHECKOUT_LINE,
        CHECKOUT_LINE + "    _CHECKOUTS[copy.copy_id] = _CHECKOUTS.get(copy.copy_id, 0) + 1\n",
        1,
    )
    (bundle / "app.py").write_text(app)
    return bundle


def _assert_leak_named(problems: list[str]) -> None:
    leaks = [p for p in problems if LEAK_PHRASE in p]
    assert len(leaks) == 1, problems
    assert "_CHECKOUTS changed after task 'borrow_solaris'" in leaks[0]


def test_the_sandboxed_bundle_check_reports_the_leak(tmp_path: Path) -> None:
    pytest.importorskip("awm_verify", reason="the verifier sandbox comes with awm-verify")
    # The function the package stage runs in its sandboxed child, called here directly.
    _assert_leak_named(bundle_problems(str(_leaky_bundle(tmp_path))))


def test_the_trusted_bundle_check_reports_the_leak(tmp_path: Path) -> None:
    _assert_leak_named(runtime_problems(_leaky_bundle(tmp_path)))


def test_the_unmodified_fixture_passes_the_bundle_check() -> None:
    assert runtime_problems(LIBRARY) == []


@pytest.mark.slow
async def test_the_package_stage_sandbox_rejects_the_leaky_bundle(tmp_path: Path) -> None:
    pytest.importorskip("awm_verify", reason="the verifier sandbox comes with awm-verify")
    from awm_synth.checks.sandbox import CheckSandbox

    bundle = _leaky_bundle(tmp_path)
    async with CheckSandbox(slots=1) as sandbox:
        problems = await sandbox.bundle_problems(bundle)
    _assert_leak_named(problems)
