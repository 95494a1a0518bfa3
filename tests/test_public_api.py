"""Each package's public names are written once, in its ``__init__.pyi``, and all of them import.

The stub is what type checkers read; :func:`awm_core.lazy.attach` turns the same
lines into the package's lazy ``__getattr__``. These tests hold both ends: every
listed name resolves to the object its module defines, nothing else is listed, and
no ``__init__.py`` keeps a second table of names.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUBS = sorted(ROOT.glob("packages/*/src/**/__init__.pyi"))


def _package(stub: Path) -> str:
    src = next(p for p in stub.parents if p.name == "src")
    return ".".join(stub.parent.relative_to(src).parts)


def _stub_names(stub: Path) -> dict[str, str]:
    """name -> the module (relative to the package) the stub says it comes from."""
    names: dict[str, str] = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and node.module, f"{stub}: only `from .module import X as X`"
            for alias in node.names:
                assert alias.asname == alias.name, f"{stub}: write `{alias.name} as {alias.name}`"
                names[alias.name] = node.module
    return names


def test_every_top_level_package_lists_its_names_in_a_stub() -> None:
    tops = {p.parent.name for p in ROOT.glob("packages/*/src/*/__init__.py")}
    assert {_package(s) for s in STUBS} >= tops


@pytest.mark.parametrize("stub", STUBS, ids=_package)
def test_every_listed_name_is_the_object_its_module_defines(stub: Path) -> None:
    package = _package(stub)
    module = importlib.import_module(package)
    names = _stub_names(stub)
    assert set(module.__all__) - {"__version__"} == set(names)
    for name, where in names.items():
        owner = importlib.import_module(f"{package}.{where}")
        assert getattr(module, name) is getattr(owner, name), f"{package}.{name}"
    assert set(dir(module)) >= set(names)
    with pytest.raises(AttributeError, match="no attribute 'not_a_public_name'"):
        _ = module.not_a_public_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("stub", STUBS, ids=_package)
def test_no_init_keeps_a_second_table_of_names(stub: Path) -> None:
    init = ast.parse(stub.with_suffix(".py").read_text())
    assigned = {
        target.id
        for node in init.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    tables = assigned & {"_EXPORTS", "_MODELS", "__all__"}
    assert not tables, f"{stub.with_suffix('.py')} lists names again: {sorted(tables)}"
    type_checking = [
        n
        for n in init.body
        if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"
    ]
    assert not type_checking, "the stub is where the names' types come from"


def test_top_level_packages_report_their_version() -> None:
    for stub in STUBS:
        package = _package(stub)
        if "." not in package:
            version = importlib.import_module(package).__version__
            assert version and version[0].isdigit(), (package, version)


def test_importing_a_package_imports_none_of_its_names() -> None:
    """The point of the stub: ``import awm_envs`` (every plugin load) costs no FastAPI."""
    code = (
        "import sys, awm_core, awm_envs, awm_verify, awm_synth, awm_train, awm_bench\n"
        "heavy = [m for m in ('fastapi', 'sqlalchemy', 'torch', 'pydantic') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == ""
