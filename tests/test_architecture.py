"""docs/architecture.md describes the tree that exists, and the lint contracts enforce it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text()
ENVS = ROOT / "packages" / "awm-envs" / "src" / "awm_envs"
SYNTH = ROOT / "packages" / "awm-synth" / "src" / "awm_synth"


def _section(title: str) -> str:
    start = DOC.index(title)
    end = DOC.find("\n### ", start + len(title))
    return DOC[start : end if end != -1 else None]


@pytest.mark.parametrize(("package", "src"), [("awm-envs", ENVS), ("awm-synth", SYNTH)])
def test_every_folder_is_documented_and_every_documented_folder_exists(
    package: str, src: Path
) -> None:
    table = _section(f"### {package}")
    documented = set(re.findall(r"^\| `(\w+)/` \|", table, flags=re.MULTILINE))
    actual = {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert documented == actual


@pytest.mark.parametrize(
    ("package", "container"), [("awm-envs", "awm_envs"), ("awm-synth", "awm_synth")]
)
def test_the_documented_layers_are_the_enforced_layers(package: str, container: str) -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contracts = {c["name"]: c for c in config["contracts"]}
    inner = next(c for c in contracts.values() if c.get("containers") == [container])
    layered = [name.strip() for layer in inner["layers"] for name in layer.split("|")]
    table = _section(f"### {package}")
    for folder in layered:
        if (ROOT / "packages" / package / "src" / container / folder).is_dir():
            assert f"| `{folder}/` |" in table, f"{folder}/ is enforced but not documented"
    packages = next(c for c in contracts.values() if "awm_core" in c.get("layers", []))
    assert packages["layers"][-1] == "awm_core" and packages["layers"][-2] == "awm_envs"


def test_every_top_level_awm_core_module_is_documented() -> None:
    table = _section("### awm-core")
    core = ROOT / "packages" / "awm-core" / "src" / "awm_core"
    modules = {p.name for p in core.glob("*.py") if p.name != "__init__.py"}
    modules |= {p.name + "/" for p in core.iterdir() if (p / "__init__.py").is_file()}
    missing = sorted(m for m in modules if f"`{m}`" not in table)
    assert not missing, f"not in docs/architecture.md: {missing}"
