"""The built awm-envs wheel ships the whole catalog.

That the light install (awm-core and awm-envs alone, from the checkout or from these
wheels) has no torch and serves over MCP is tests/test_install_paths.py's, which runs
docs/install.md's own lines."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_every_catalog_file_is_inside_the_built_awm_envs_wheel(wheelhouse: Path) -> None:
    """Opened, not inferred from pyproject.toml: each catalog file is in the wheel, byte for byte."""
    import zipfile

    catalog = Path(__file__).resolve().parents[1] / "packages/awm-envs/src/awm_envs/catalog"
    wanted = {
        p.relative_to(catalog.parent.parent).as_posix(): p.read_bytes()
        for p in catalog.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert len({Path(k).parts[2] for k in wanted if k.count("/") >= 3}) >= 10  # ten environments
    (wheel,) = wheelhouse.glob("awm_envs-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = {name: zf.read(name) for name in zf.namelist() if name in wanted}
    missing = sorted(set(wanted) - set(shipped))
    assert not missing, f"not in the wheel: {missing[:10]}"
    assert shipped == wanted
