"""mcpuniverse 1.1.3 in its own venv, and the driver process awm talks to.

mcpuniverse pins ``mcp==1.13.1``, ``pydantic==2.11.7``, ``openai==1.106.1`` and more;
awm-envs needs mcp 2.x, so the two cannot share a venv (and mcpuniverse cannot be an
extra of awm-bench). awm finds the venv's Python in ``AWM_MCPU_PYTHON`` (``nox -s
bench`` sets it) or at :data:`DEFAULT_VENV`, and starts :mod:`awm_bench.mcpu.driver`
there: MCP-Universe's own task loader, servers, agent, runner and evaluator.

Create the venv with ``python -m awm_bench.mcpu.upstream --create [PATH]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from awm_core.errors import AWMError

MCPU_VERSION = "1.1.3"
PYTHON_ENV = "AWM_MCPU_PYTHON"
SERVERS_ENV = "AWM_MCPU_SERVERS"
"""A server list in MCP-Universe's ``server_list.json`` format whose entries the driver
adds over MCP-Universe's built-in list (a server swapped for a local stand-in, a
self-hosted one); :mod:`awm_bench.mcpu.driver` reads it from its environment."""
DEFAULT_VENV = Path.home() / ".cache" / "awm" / f"mcpuniverse-{MCPU_VERSION}"
INSTALL_HINT = (
    f"mcpuniverse=={MCPU_VERSION} needs its own venv (it pins mcp 1.13; awm needs mcp 2.x): "
    f"`python -m awm_bench.mcpu.upstream --create` (or set {PYTHON_ENV} to the Python of a "
    f"venv with mcpuniverse=={MCPU_VERSION}), or run `nox -s bench`"
)
DRIVER = Path(__file__).with_name("driver.py")


class McpuUnavailableError(AWMError):
    """mcpuniverse (the pinned release) has no venv awm can find."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(INSTALL_HINT + (f" ({detail})" if detail else ""))


class DriverError(AWMError):
    """The MCP-Universe driver failed a request or died; its log has the details."""


def python() -> Path:
    """The Python of mcpuniverse's venv: ``AWM_MCPU_PYTHON``, else :data:`DEFAULT_VENV`'s."""
    configured = os.environ.get(PYTHON_ENV)
    return Path(configured) if configured else DEFAULT_VENV / "bin" / "python"


def installed_version(interpreter: Path) -> str | None:
    """mcpuniverse's version in ``interpreter``'s environment, or None."""
    if not interpreter.exists():
        return None
    probe = "from importlib.metadata import version; print(version('mcpuniverse'))"
    try:
        done = subprocess.run(
            [str(interpreter), "-I", "-c", probe],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def available() -> str | None:
    """None when mcpuniverse (the pinned release) can be driven, else what to do."""
    interpreter = python()
    found = installed_version(interpreter)
    if found is None:
        return f"no mcpuniverse at {interpreter}: {INSTALL_HINT}"
    if found != MCPU_VERSION:
        return f"mcpuniverse {found} is at {interpreter}; awm needs {MCPU_VERSION}: {INSTALL_HINT}"
    return None


def driver_env(interpreter: Path) -> dict[str, str]:
    """The driver's environment: MCP-Universe starts its Python servers as ``python3``
    found on PATH, so the venv's ``bin`` comes first."""
    env = dict(os.environ)
    env["PATH"] = f"{interpreter.parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


class Driver:
    """The driver process (:mod:`awm_bench.mcpu.driver`): one request, one answer.

    Its stderr (MCP-Universe's and its servers' logs) goes to ``log``.
    """

    def __init__(self, log: Path, interpreter: Path | None = None) -> None:
        self.log = log
        self.interpreter = interpreter or python()
        self._proc: asyncio.subprocess.Process | None = None
        self._log_file: IO[bytes] | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> Driver:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log.open("ab")
        self._proc = await asyncio.create_subprocess_exec(
            str(self.interpreter),
            "-I",
            str(DRIVER),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log_file,
            env=driver_env(self.interpreter),
            limit=64 * 1024 * 1024,
        )
        return self

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its answer (without ``ok``), or :class:`DriverError`."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise DriverError("the MCP-Universe driver is not running")
        async with self._lock:
            proc.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
            await proc.stdin.drain()
            line = await proc.stdout.readline()
        if not line:
            raise DriverError(f"the MCP-Universe driver exited (see {self.log})")
        answer: dict[str, Any] = json.loads(line)
        if not answer.pop("ok", False):
            raise DriverError(f"MCP-Universe driver: {answer.get('error')} (see {self.log})")
        return answer

    async def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), timeout=30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    async def __aenter__(self) -> Driver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def create_venv(path: Path = DEFAULT_VENV) -> Path:
    """Create a venv at ``path`` with mcpuniverse (and its own pins); its Python."""
    import shutil

    uv = shutil.which("uv")
    interpreter = path / "bin" / "python"
    if uv:
        subprocess.run([uv, "venv", "-q", "-p", sys.executable, str(path)], check=True)
        install = [uv, "pip", "install", "-q", "-p", str(interpreter)]
    else:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        install = [str(interpreter), "-m", "pip", "install", "-q"]
    subprocess.run([*install, f"mcpuniverse=={MCPU_VERSION}"], check=True)
    return interpreter


def main(argv: list[str] | None = None) -> int:
    """``python -m awm_bench.mcpu.upstream [--create [PATH]]``: where the venv is, or make it."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m awm_bench.mcpu.upstream",
        description=f"Show or create the venv with mcpuniverse=={MCPU_VERSION} "
        "(it cannot share awm's venv: it pins mcp 1.13).",
    )
    parser.add_argument(
        "--create",
        nargs="?",
        const=DEFAULT_VENV,
        type=Path,
        metavar="PATH",
        help=f"create the venv (default {DEFAULT_VENV}) and install mcpuniverse into it",
    )
    args = parser.parse_args(argv)
    if args.create is not None:
        interpreter = create_venv(args.create)
        print(f"created; use it with: export {PYTHON_ENV}={interpreter}")
        return 0
    problem = available()
    print(problem or f"mcpuniverse {MCPU_VERSION} at {python()}")
    return 1 if problem else 0


if __name__ == "__main__":
    sys.exit(main())
