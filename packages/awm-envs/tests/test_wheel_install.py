"""The built wheels (awm-core + awm-envs) install into an empty venv and serve over stdio, without torch."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import mcp
import pytest
from mcp import StdioServerParameters

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{cmd[:4]} failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out  # type: ignore[no-any-return]


def test_wheels_install_and_serve_over_stdio(tmp_path: Path, library_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    dist = tmp_path / "dist"
    for package in ("awm-core", "awm-envs"):
        _run([uv, "build", "--package", package, "--wheel", "--out-dir", str(dist)], cwd=REPO)
    venv = tmp_path / "venv"
    _run([uv, "venv", str(venv), "--python", "3.11"])
    python = venv / "bin" / "python"
    _run([uv, "pip", "install", "--python", str(python), *map(str, sorted(dist.glob("*.whl")))])
    heavy = _run(
        [
            str(python),
            "-c",
            "import importlib.util as u; print([m for m in ('torch','transformers','verl') if u.find_spec(m)])",
        ]
    )
    assert heavy.stdout.strip() == "[]"

    params = StdioServerParameters(
        command=str(venv / "bin" / "awm"),
        args=["envs", "serve", str(library_path), "--stdio"],
        env={"PATH": str(venv / "bin"), "AWM_LOAD_PLUGINS": "envs"},
    )

    async def run() -> None:
        async with mcp.Client(params) as client:
            assert "get_book" in {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool("get_book", {"book_id": 3})
            assert not result.is_error and result.structured_content["title"] == "Solaris"

    asyncio.run(run())
