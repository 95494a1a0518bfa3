"""``pip install awm-envs`` alone: no torch, transformers or verl, and the CLI works."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def light_venv(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory, make_venv, run) -> Path:
    bin_dir = make_venv(tmp_path_factory.mktemp("light") / "venv")
    wheels = sorted(str(p) for p in wheelhouse.glob("*.whl"))
    out = run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", *wheels])
    assert out.returncode == 0, out.stderr[-3000:]
    return bin_dir


def test_light_install_has_no_heavy_dependencies(light_venv: Path, run) -> None:
    code = (
        "import importlib.util, json;"
        "print(json.dumps({m: importlib.util.find_spec(m) is not None "
        "for m in ['torch', 'transformers', 'verl', 'awm_envs', 'awm_core']}))"
    )
    found = json.loads(run([str(light_venv / "python"), "-c", code]).stdout)
    assert found == {
        "torch": False,
        "transformers": False,
        "verl": False,
        "awm_envs": True,
        "awm_core": True,
    }


def test_light_install_runs_the_cli(light_venv: Path, run) -> None:
    out = run([str(light_venv / "awm"), "--help"])
    assert out.returncode == 0, out.stderr
    assert "envs" in out.stdout
    plugins = json.loads(run([str(light_venv / "awm"), "plugins", "--json"]).stdout)
    assert {p["package"] for p in plugins} == {"awm-core", "awm-envs"}


def test_light_install_serves_a_catalog_environment_over_stdio(light_venv: Path) -> None:
    """What a newcomer does right after ``pip install awm-envs``: serve ``shop`` over MCP."""
    import asyncio

    import mcp
    from mcp import StdioServerParameters

    params = StdioServerParameters(
        command=str(light_venv / "awm"),
        args=["envs", "serve", "shop", "--stdio"],
        env={"PATH": str(light_venv)},
    )

    async def session() -> None:
        async with mcp.Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"search_products", "get_current_time"} <= tools
            found = await client.call_tool("search_products", {"query": "Aeropress"})
            assert not found.is_error
            bad = await client.call_tool("search_products", {"query": 42})
            assert bad.is_error

    asyncio.run(session())


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
