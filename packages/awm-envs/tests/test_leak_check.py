"""``awm envs validate`` fails an app whose tools keep state outside the database.

In-process, every instance of an environment shares one imported ``app.py``:
a module-level dict, counter or cache a tool writes through one instance is
seen by every other one. Each test copies the library fixture, plants one
such defect in its app.py, and checks that validation names it; the shipped
bundles must stay clean.
"""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

import pytest
from hostile import LIBRARY

from awm_envs.validation.leakcheck import LEAK_PHRASE, changed_names, module_state
from awm_envs.validation.validate import validate_environment

CHECKOUT_LINE = '    copy.status = "on_loan"\n'


def _variant(tmp_path: Path, header: str, in_checkout: str, footer: str = "") -> Path:
    """The library fixture with ``header`` after its imports and ``in_checkout`` in checkout_copy."""
    bundle = tmp_path / "library"
    shutil.copytree(LIBRARY, bundle)
    app = (bundle / "app.py").read_text()
    assert CHECKOUT_LINE in app
    anchor = "app = FastAPI("
    app = app.replace(anchor, header + "\n\n" + anchor, 1)
    app = app.replace(CHECKOUT_LINE, CHECKOUT_LINE + in_checkout, 1)
    (bundle / "app.py").write_text(app + footer)
    return bundle


def _leaks(problems: list[str]) -> list[str]:
    return [p for p in problems if LEAK_PHRASE in p]


@pytest.mark.parametrize("sandbox", [False, True], ids=["in-process", "sandboxed-verifiers"])
def test_a_module_level_dict_a_tool_writes_is_reported_by_name(
    tmp_path: Path, sandbox: bool
) -> None:
    if sandbox:
        pytest.importorskip("awm_verify", reason="the verifier sandbox comes with awm-verify")
    bundle = _variant(
        tmp_path,
        "_CHECKOUTS: dict[int, int] = {}",
        "    _CHECKOUTS[copy.copy_id] = _CHECKOUTS.get(copy.copy_id, 0) + 1\n",
    )
    result = validate_environment(bundle, sandbox=sandbox)
    assert not result.passed
    assert all(t.passed for t in result.tasks), [t.problems for t in result.tasks]
    (leak,) = _leaks(result.problems)
    assert leak.startswith(f"app.py: {LEAK_PHRASE}: _CHECKOUTS changed after task 'borrow_solaris'")


def test_a_global_counter_used_in_a_response_is_reported_with_the_changed_result(
    tmp_path: Path,
) -> None:
    bundle = _variant(
        tmp_path,
        "_RECEIPT_NO = 1000",
        "    global _RECEIPT_NO\n    _RECEIPT_NO += 1\n",
    )
    # The response carries the counter: the second fresh instance gets another receipt number.
    app = (bundle / "app.py").read_text()
    original = "    return LoanOut(\n        loan_id=loan.loan_id, copy_id=copy.copy_id,"
    assert original in app
    app = app.replace(
        original,
        "    return LoanOut(\n        loan_id=loan.loan_id + _RECEIPT_NO - 1001, copy_id=copy.copy_id,",
        1,
    )
    (bundle / "app.py").write_text(app)
    result = validate_environment(bundle, sandbox=False)
    (leak,) = _leaks(result.problems)
    assert "_RECEIPT_NO changed after task 'borrow_solaris'" in leak
    assert "replayed on a second fresh instance, step 2 (checkout_copy) returned" in leak
    assert not result.passed


def test_class_attributes_and_mutable_defaults_are_reported(tmp_path: Path) -> None:
    bundle = _variant(
        tmp_path,
        "class Ledger:\n    entries: list = []\n\n\ndef _remember(copy_id, seen=[]):\n"
        "    seen.append(copy_id)\n    return len(seen)",
        "    Ledger.entries.append(copy.copy_id)\n    _remember(copy.copy_id)\n",
    )
    result = validate_environment(bundle, sandbox=False)
    (leak,) = _leaks(result.problems)
    assert "Ledger.entries" in leak and "_remember (default argument)" in leak


def test_state_the_fingerprint_cannot_see_is_caught_by_the_second_instance(
    tmp_path: Path,
) -> None:
    # A threading.local is opaque to the fingerprint; replaying on a second instance shows it.
    bundle = _variant(
        tmp_path,
        "import threading as _threading\n\n_TALLY = _threading.local()",
        "    _TALLY.n = getattr(_TALLY, 'n', 0) + 1\n"
        "    if _TALLY.n > 1:\n"
        "        raise HTTPException(409, 'you already borrowed a copy today')\n",
    )
    result = validate_environment(bundle, sandbox=False)
    (leak,) = _leaks(result.problems)
    assert "task 'borrow_solaris''s reference solution replayed on a second fresh instance" in leak
    assert "step 2 (checkout_copy) returned 'error conflict: you already borrowed" in leak
    assert not result.passed


def test_the_leak_check_can_be_turned_off(tmp_path: Path) -> None:
    bundle = _variant(tmp_path, "_SEEN: set[int] = set()", "    _SEEN.add(copy.copy_id)\n")
    assert _leaks(validate_environment(bundle, sandbox=False).problems)
    result = validate_environment(bundle, sandbox=False, check_leaks=False)
    assert result.passed, result.problems


def test_a_leak_is_reported_once_not_for_every_task(tmp_path: Path) -> None:
    bundle = _variant(tmp_path, "_LOG: list[str] = []", "    _LOG.append('checkout')\n")
    app = (bundle / "app.py").read_text()
    app = app.replace(
        '    loan.returned_at = REFERENCE_TIME.isoformat() + "Z"\n',
        '    loan.returned_at = REFERENCE_TIME.isoformat() + "Z"\n    _LOG.append("return")\n',
        1,
    )
    (bundle / "app.py").write_text(app)
    result = validate_environment(bundle, sandbox=False)
    (leak,) = _leaks(result.problems)
    assert "_LOG changed after task 'borrow_solaris'" in leak


@pytest.mark.parametrize("env_id", ["shop", "tracker", "travel"])
def test_catalog_environments_have_no_false_positives(env_id: str) -> None:
    result = validate_environment(env_id)
    assert result.passed, result.problems
    assert not _leaks(result.problems)


def test_the_library_fixture_has_no_false_positive() -> None:
    result = validate_environment(LIBRARY, sandbox=False)
    assert result.passed, result.problems


def _module(source: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("awm_env_probe")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look it up
    exec(compile(source, "app.py", "exec"), vars(module))  # noqa: S102 - our own test source
    return module


def test_the_fingerprint_sees_data_and_ignores_code_and_frameworks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = _module(
        "import functools, itertools, random, re\n"
        "from collections import UserDict, defaultdict\n"
        "from dataclasses import dataclass, field\n"
        "from fastapi import FastAPI\n"
        "from sqlalchemy import create_engine\n"
        "app = FastAPI()\n"
        "engine = create_engine('sqlite://')\n"
        "PATTERN = re.compile('x')\n"
        "LIMIT = 5\n"
        "BY_ID = defaultdict(list)\n"
        "IDS = itertools.count(1)\n"
        "RNG = random.Random(7)\n"
        "STORE = UserDict()\n"
        "@dataclass\n"
        "class Cart:\n"
        "    items: list = field(default_factory=list)\n"
        "CART = Cart()\n"
        "def make():\n"
        "    hits = {}\n"
        "    def hit(k):\n"
        "        hits[k] = hits.get(k, 0) + 1\n"
        "    return hit\n"
        "hit = make()\n"
        "@functools.lru_cache\n"
        "def pure(x):\n"
        "    return x * 2\n",
        monkeypatch,
    )
    before = module_state(module)
    assert changed_names(before, module_state(module)) == []
    module.pure(3)  # memoisation is not a leak
    module.app.title = "renamed"  # framework objects count by identity only
    assert changed_names(before, module_state(module)) == []

    module.BY_ID[1].append("a")
    next(module.IDS)
    module.RNG.random()
    module.STORE["k"] = 1
    module.CART.items.append(1)
    module.hit("k")
    setattr(module, "LIMIT", 6)  # noqa: B010 - rebinding a global, as `global LIMIT` would
    assert changed_names(before, module_state(module)) == [
        "LIMIT",
        "BY_ID",
        "IDS",
        "RNG",
        "STORE",
        "CART",
        "hit (closure variable hits)",
    ]


def test_the_fingerprint_survives_cycles_and_huge_values(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _module("LOOP = []\nLOOP.append(LOOP)\nBIG = list(range(200_000))\n", monkeypatch)
    before = module_state(module)
    assert changed_names(before, module_state(module)) == []
    module.BIG.append(1)
    assert "BIG" in changed_names(before, module_state(module))
