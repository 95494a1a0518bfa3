"""docs/install.md's install lines, run as written in fresh venvs, and docs/plugins.md's.

awm is not on PyPI, so the only installs that work are from a checkout or from
wheels built with ``uv build``. The blocks of docs/install.md and docs/plugins.md
marked ``<!-- install-test: ID -->`` / ``<!-- plugin-install: ID -->`` are read
from the pages and run by bash in a copy of this checkout, with a ``PATH`` that
holds only the system's folders plus ``python3`` (this interpreter's base) and
``uv``: the workspace venv's ``awm`` and ``pip`` cannot stand in for the fresh
venv's. Each route starts from an empty venv made by the page's own line; the
package index is needed, as in CI. The extras are resolved, not installed
(``uv pip install --no-sources --dry-run``: package metadata only, and awm's
packages only from the paths or wheels a line names, as pip would find them).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL_MD = ROOT / "docs" / "install.md"
PLUGINS_MD = ROOT / "docs" / "plugins.md"
TRAINING_MD = ROOT / "docs" / "training.md"
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
AWM_NAME = re.compile(r"awm[-_](?:" + "|".join(p.removeprefix("awm-") for p in PACKAGES) + r")\b")
EXPECT = re.compile(r"<!--\s*doc-test-expect:\s*(?P<text>.+?)\s*-->")
SERVE_LINE = "awm envs serve shop --stdio"


# ---------------------------------------------------------------------------- reading the pages


@dataclass
class Marked:
    text: str  # the block's contents
    expect: list[str] = field(default_factory=list)  # its doc-test-expect texts

    @property
    def commands(self) -> list[list[str]]:
        """Each non-empty line as argv (comments dropped)."""
        return [
            argv for line in self.text.splitlines() if (argv := shlex.split(line, comments=True))
        ]


def marked_blocks(path: Path, kind: str) -> dict[str, Marked]:
    """The fenced blocks after ``<!-- KIND: ID -->`` lines (other comment lines may stand between)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: dict[str, Marked] = {}
    for i, line in enumerate(lines):
        marker = re.fullmatch(rf"<!--\s*{kind}:\s*([\w-]+)\s*-->", line.strip())
        if not marker:
            continue
        j = i + 1
        while not lines[j].startswith("```"):
            assert lines[j].strip().startswith("<!--"), f"{path}:{i + 1}: no block after the marker"
            j += 1
        k = j + 1
        while not lines[k].startswith("```"):
            k += 1
        expect = []
        m = k + 1
        while m < len(lines) and (hit := EXPECT.fullmatch(lines[m].strip())):
            expect.append(hit.group("text"))
            m += 1
        found[marker.group(1)] = Marked("\n".join(lines[j + 1 : k]), expect)
    return found


INSTALL = marked_blocks(INSTALL_MD, "install-test")
PLUGIN = marked_blocks(PLUGINS_MD, "plugin-install")


def fenced_lines(path: Path) -> list[tuple[int, str, str]]:
    """(line number, line, the marker line above its block) for every line of every fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[tuple[int, str, str]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            above = " ".join(lines[max(0, i - 2) : i])
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                out.append((j + 1, lines[j], above))
                j += 1
            i = j
        i += 1
    return out


# ---------------------------------------------------------------------------- running them


def user_env(tmp: Path) -> dict[str, str]:
    """A newcomer's shell: system folders, ``python3`` and ``uv``; no awm settings, no keys."""
    shim = tmp / "shim"
    shim.mkdir(exist_ok=True)
    python3 = shim / "python3"
    if not python3.exists():
        python3.symlink_to(Path(getattr(sys, "_base_executable", sys.executable)))
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH")
    if not (shim / "uv").exists():
        (shim / "uv").symlink_to(uv)
    drop = ("AWM_", "OPENAI_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_", "UV_")
    # uv's settings for this machine's package index stay; nox's (UV_PROJECT_ENVIRONMENT:
    # the venv running these tests) go, or an install could land in the running venv
    keep = (
        "UV_FIND_LINKS",
        "UV_SYSTEM_CERTS",
        "UV_PYTHON_DOWNLOADS",
        "UV_INDEX",
        "UV_DEFAULT_INDEX",
    )
    env = {k: v for k, v in os.environ.items() if k.startswith(keep) or not k.startswith(drop)}
    env["PATH"] = os.pathsep.join([str(shim), "/usr/local/bin", "/usr/bin", "/bin"])
    env["AWM_CACHE_DIR"] = str(tmp / "cache")
    env["COLUMNS"] = "200"
    return env


def copy_checkout(dest: Path) -> Path:
    """This checkout's files (tracked, and new ones git does not ignore), as a clone would have them."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = ROOT / name
        if src.is_file():  # a deleted, not yet committed file is listed too
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "set -e\n" + script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def assert_ok(done: subprocess.CompletedProcess[str], what: str) -> None:
    assert done.returncode == 0, (
        f"{what} exited {done.returncode}\nstdout:\n{done.stdout[-3000:]}\n"
        f"stderr:\n{done.stderr[-5000:]}"
    )


@dataclass
class Installed:
    """One documented route, run in a copy of the checkout, and what the result showed."""

    checkout: Path
    env: dict[str, str]
    check: subprocess.CompletedProcess[str]  # the page's "check it" block
    plugins: set[str]  # packages of `awm plugins --json`
    modules: dict[str, bool]  # importable in the venv
    tools: set[str]  # listed by `awm envs serve shop --stdio`
    calls: dict[str, bool]  # is_error of a good and of a bad call

    @property
    def venv(self) -> Path:
        return self.checkout / "venv"


def install_route(blocks: list[str], tmp: Path) -> Installed:
    """Run the page's blocks in order in one shell, then look at the venv they made."""
    env = user_env(tmp)
    checkout = copy_checkout(tmp / "awm")
    assert_ok(bash("\n".join(INSTALL[b].text for b in blocks), checkout, env), f"blocks {blocks}")
    venv = checkout / "venv"
    assert (venv / "bin" / "awm").is_file(), "the install left no awm in the fresh venv"
    check = bash(". venv/bin/activate\n" + INSTALL["check"].text, checkout, env)
    listed = subprocess.run(
        [str(venv / "bin" / "awm"), "plugins", "--json"], env=env, capture_output=True, text=True
    )
    assert_ok(listed, "awm plugins --json")
    probe = (
        "import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) is not None "
        "for m in ['torch', 'transformers', 'verl', 'awm_core', 'awm_envs']}))"
    )
    modules = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], env=env, capture_output=True, text=True
    )
    assert_ok(modules, "the import probe")
    tools, calls = asyncio.run(mcp_smoke(venv, env))
    return Installed(
        checkout=checkout,
        env=env,
        check=check,
        plugins={p["package"] for p in json.loads(listed.stdout)},
        modules=json.loads(modules.stdout),
        tools=tools,
        calls=calls,
    )


async def mcp_smoke(venv: Path, env: dict[str, str]) -> tuple[set[str], dict[str, bool]]:
    """What the docs say comes next: ``awm envs serve shop --stdio``, used by an MCP client."""
    import mcp
    from mcp import StdioServerParameters

    argv = shlex.split(SERVE_LINE)
    params = StdioServerParameters(
        command=str(venv / "bin" / argv[0]),
        args=argv[1:],
        env={"PATH": str(venv / "bin"), "AWM_CACHE_DIR": env["AWM_CACHE_DIR"]},
    )
    async with mcp.Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        good = await client.call_tool("search_products", {"query": "lamp"})
        bad = await client.call_tool("search_products", {"query": 42})
    return tools, {"good": bool(good.is_error), "bad": bool(bad.is_error)}


@pytest.fixture(scope="module")
def checkout_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """docs/install.md: a fresh venv, then ``pip install ./packages/awm-core ./packages/awm-envs``."""
    return install_route(["venv", "checkout"], tmp_path_factory.mktemp("from-checkout"))


@pytest.fixture(scope="module")
def wheels_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """docs/install.md: ``uv build`` into dist/, a fresh venv, then pip install the two wheels."""
    return install_route(["build", "venv", "wheels"], tmp_path_factory.mktemp("from-wheels"))


ROUTES = ["checkout_install", "wheels_install"]


# ---------------------------------------------------------------------------- the light path


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_the_light_path_installs_and_its_check_prints_what_the_page_says(
    route: str, request: pytest.FixtureRequest
) -> None:
    installed: Installed = request.getfixturevalue(route)
    assert_ok(installed.check, "the check block")
    expected = INSTALL["check"].expect
    assert expected, "the check block pins no output"
    missing = [text for text in expected if text not in installed.check.stdout]
    assert not missing, f"not printed: {missing}\n{installed.check.stdout[-3000:]}"
    assert installed.plugins == {"awm-core", "awm-envs"}


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_the_light_path_pulls_no_torch(route: str, request: pytest.FixtureRequest) -> None:
    installed: Installed = request.getfixturevalue(route)
    assert installed.modules == {
        "torch": False,
        "transformers": False,
        "verl": False,
        "awm_core": True,
        "awm_envs": True,
    }


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES)
def test_the_light_path_serves_a_catalog_environment_over_mcp(
    route: str, request: pytest.FixtureRequest
) -> None:
    installed: Installed = request.getfixturevalue(route)
    assert {"search_products", "get_current_time"} <= installed.tools
    assert installed.calls == {"good": False, "bad": True}  # bad: a number where a string goes


# ---------------------------------------------------------------------------- extras


def extras_lines() -> list[list[str]]:
    return [*INSTALL["extras"].commands, *INSTALL["wheel-extras"].commands]


@pytest.mark.slow
def test_every_documented_extras_line_resolves(wheels_install: Installed, tmp_path: Path) -> None:
    """Each line, as pip would see it: awm's packages only from the paths or wheels it names."""
    env = wheels_install.env
    uv = str(Path(env["PATH"].split(os.pathsep)[0]) / "uv")
    venv = tmp_path / "empty"
    assert_ok(
        subprocess.run(
            [uv, "venv", "-q", "-p", sys.executable, str(venv)],
            env=env,
            capture_output=True,
            text=True,
        ),
        "uv venv",
    )
    lines = extras_lines()
    assert all(argv[:2] == ["pip", "install"] for argv in lines), lines

    def resolve(argv: list[str]) -> tuple[str, subprocess.CompletedProcess[str]]:
        cmd = [uv, "pip", "install", "--no-sources", "--dry-run", "--quiet"]
        cmd += ["--python", str(venv / "bin" / "python"), *argv[2:]]
        done = subprocess.run(
            cmd, cwd=wheels_install.checkout, env=env, capture_output=True, text=True, timeout=600
        )
        return shlex.join(argv), done

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(resolve, lines))
    failed = {line: done.stderr[-1500:] for line, done in results if done.returncode != 0}
    assert not failed, json.dumps(failed, indent=1)


def gpu_install_lines() -> list[list[str]]:
    """docs/training.md's GPU install (``nox -s train`` resolves it for Linux with CUDA)."""
    return [
        shlex.split(line, comments=True)
        for _, line, above in fenced_lines(TRAINING_MD)
        if "<!-- gpu-install -->" in above and line.strip()
    ]


def test_every_extra_of_every_package_is_documented() -> None:
    """install.md's extras block names each extra (``gpu``: training.md's GPU install)."""
    declared = set()
    for package in PACKAGES:
        meta = tomllib.loads((ROOT / "packages" / package / "pyproject.toml").read_text())
        declared |= {(package, extra) for extra in meta["project"].get("optional-dependencies", {})}
    named = {
        (f"awm-{m.group(1)}", extra.strip())
        for argv in [*INSTALL["extras"].commands, *gpu_install_lines()]
        for arg in argv
        if (m := re.fullmatch(r"(?:\./)?packages/awm-(\w+)\[([\w,]+)\]", arg))
        for extra in m.group(2).split(",")
    }
    assert named == declared


def test_every_awm_install_line_in_the_docs_is_a_tested_one() -> None:
    """A ``pip install`` of awm in any page's code block is one of the lines this module runs
    (or the GPU line of docs/training.md, which ``nox -s train`` resolves)."""
    tested = {shlex.join(argv) for block in INSTALL.values() for argv in block.commands}
    tested |= {shlex.join(argv) for argv in gpu_install_lines()}
    pages = [ROOT / "README.md", *ROOT.glob("packages/*/README.md"), *ROOT.glob("docs/*.md")]
    checked, stray = 0, []
    for page in pages:
        if page == INSTALL_MD:
            continue
        for number, line, _ in fenced_lines(page):
            if not re.match(r"\s*pip install\b", line) or not AWM_NAME.search(line):
                continue
            checked += 1
            if shlex.join(shlex.split(line, comments=True)) not in tested:
                stray.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not stray, "install lines docs/install.md does not hold:\n" + "\n".join(stray)
    assert checked >= 7  # README.md and the packages' READMEs each show one


def test_the_check_block_and_the_serve_line_are_on_the_page() -> None:
    """The MCP smoke above uses the page's own serve line; the routes share one check block."""
    assert SERVE_LINE in INSTALL_MD.read_text(encoding="utf-8")
    assert set(INSTALL) == {
        "venv",
        "checkout",
        "check",
        "extras",
        "build",
        "wheels",
        "wheel-extras",
    }
    assert "not on PyPI" in INSTALL_MD.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- docs/plugins.md


def shortest_plugin(dest: Path) -> Path:
    """docs/plugins.md's shortest plugin, its files named by each block's first comment line."""
    text = PLUGINS_MD.read_text(encoding="utf-8")
    files = {}
    for body in re.findall(r"```(?:toml|python)\n(.*?)```", text, flags=re.S):
        first = body.splitlines()[0]
        if first.startswith("# ") and first[2:].strip().endswith((".toml", ".py")):
            files[first[2:].strip()] = body
    assert set(files) == {"pyproject.toml", "src/awm_myreward/__init__.py"}, files
    for name, body in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(body, encoding="utf-8")
    return dest


def check_plugin_is_live(venv: Path, env: dict[str, str], printed: str) -> None:
    assert "myreward" in printed, printed[-3000:]
    listed = subprocess.run(
        [str(venv / "bin" / "awm"), "plugins", "--json"], env=env, capture_output=True, text=True
    )
    assert_ok(listed, "awm plugins --json")
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["myreward"]["registers"] == {"reward_functions": ["shaped"]}
    used = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "from awm_core import get_reward_function; "
            "print(get_reward_function('shaped')(None, None).value)",
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert_ok(used, "get_reward_function('shaped')")
    assert used.stdout.strip() == "0.5"


@pytest.mark.slow
def test_the_shortest_plugin_installs_with_pip_in_a_venv_made_as_install_md_says(
    wheels_install: Installed, tmp_path: Path
) -> None:
    """The venv of the wheel route (nothing else in it), then plugins.md's pip block as written."""
    project = shortest_plugin(tmp_path / "awm-myreward")
    venv = wheels_install.venv
    try:
        done = bash(
            f". {shlex.quote(str(venv))}/bin/activate\n" + PLUGIN["pip"].text,
            project,
            wheels_install.env,
        )
    finally:
        stray = not_in_the_running_venv("awm-myreward")
    assert not stray, stray
    assert_ok(done, "plugins.md's pip block")
    check_plugin_is_live(venv, wheels_install.env, done.stdout)


@pytest.mark.slow
def test_the_shortest_plugin_installs_with_uv_in_a_venv_without_pip(
    wheels_install: Installed, tmp_path: Path
) -> None:
    """plugins.md's uv block, in a venv with no pip that holds awm-core (as the workspace's does:
    here awm-core's wheel from the wheel route stands in for ``uv sync``)."""
    env = wheels_install.env
    uv = str(Path(env["PATH"].split(os.pathsep)[0]) / "uv")
    venv = tmp_path / "workspace-venv"
    made = subprocess.run(
        [uv, "venv", "-q", "-p", sys.executable, str(venv)], env=env, capture_output=True, text=True
    )
    assert_ok(made, "uv venv")
    (core,) = (wheels_install.checkout / "dist").glob("awm_core-*.whl")
    added = subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(core)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert_ok(added, "uv pip install awm-core's wheel")
    assert not (venv / "bin" / "pip").exists()
    project = shortest_plugin(tmp_path / "awm-myreward")
    try:
        done = bash(f". {shlex.quote(str(venv))}/bin/activate\n" + PLUGIN["uv"].text, project, env)
    finally:
        stray = not_in_the_running_venv("awm-myreward")
    assert not stray, stray
    assert_ok(done, "plugins.md's uv block")
    check_plugin_is_live(venv, env, done.stdout)


def not_in_the_running_venv(dist: str) -> str:
    """'' when ``dist`` is not installed in the venv running these tests; else it is removed
    (a plugin whose source folder is deleted after the test would break every later
    test that loads plugins) and the reason is returned."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        found = distribution(dist)
    except PackageNotFoundError:
        return ""
    subprocess.run(
        [shutil.which("uv") or "uv", "pip", "uninstall", "-q", "--python", sys.executable, dist],
        capture_output=True,
    )
    return f"{dist} was installed into the venv running the tests ({found.locate_file('')})"
