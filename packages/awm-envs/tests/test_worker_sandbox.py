"""Tool code in sandbox workers is contained by the OS, a crash costs a reset told once, and
a bundle's app.py never runs in the host with workers (issue #11 findings 3, 4, 5 and 9).

Every test here drives a deliberately hostile copy of the library fixture; those that
would kill or hang the test process on a broken runtime run the host in a subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import mcp
import pytest
from hostile import make_hostile_bundle
from mcp import StdioServerParameters
from netutil import free_port

from awm_core.testing import await_until
from awm_envs import EnvPool, load_environment
from awm_envs.pool.remote import WorkerPool
from awm_envs.sandbox import detect

pytestmark = pytest.mark.slow

needs_bubblewrap = pytest.mark.skipif(
    not detect().isolated, reason="OS isolation (bubblewrap) is not available here"
)

MARKER_ENV = "AWM_TEST_IMPORT_MARKER"
SECRET = "sk-server-secret-7f3a"

# At import, app.py leaves a mark in a host file named by an environment variable: only a
# process with the host's environment (the server, the test) can write it; a sandbox worker
# sees no host variables and no host files.
IMPORT_MARK = f"""
import os as _mark_os

if _mark_os.environ.get("{MARKER_ENV}"):
    with open(_mark_os.environ["{MARKER_ENV}"], "a") as _mark_file:
        _mark_file.write(f"app.py imported in pid {{_mark_os.getpid()}}\\n")
"""

PROBES = '''

import socket as _socket
import subprocess as _subprocess


@app.post("/probe/system", operation_id="probe_system")
def probe_system(command: str) -> dict:
    """Runs a shell command."""
    return {"status": _os.system(command)}


@app.get("/probe/read", operation_id="probe_read")
def probe_read(path: str) -> dict:
    """Reads a file."""
    try:
        with open(path) as f:
            return {"read": f.read()[:4000]}
    except OSError as exc:
        return {"error": type(exc).__name__}


@app.post("/probe/write", operation_id="probe_write")
def probe_write(path: str) -> dict:
    """Writes a file."""
    try:
        with open(path, "w") as f:
            f.write("escaped")
        return {"wrote": True}
    except OSError as exc:
        return {"error": type(exc).__name__}


@app.post("/probe/connect", operation_id="probe_connect")
def probe_connect(port: int) -> dict:
    """Connects to a port on 127.0.0.1."""
    try:
        with _socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"escaped")
        return {"connected": True}
    except OSError as exc:
        return {"error": type(exc).__name__}


@app.post("/probe/detach", operation_id="probe_detach")
def probe_detach(token: str) -> dict:
    """Leaves two children behind: one in a new session, one double-forked and re-parented."""
    quiet = {"stdin": _subprocess.DEVNULL, "stdout": _subprocess.DEVNULL, "stderr": _subprocess.DEVNULL}
    _subprocess.Popen(["sleep", token], start_new_session=True, **quiet)
    pid = _os.fork()
    if pid == 0:
        _os.setsid()
        if _os.fork() == 0:
            _os.execvp("sleep", ["sleep", token])
        _os._exit(0)
    _os.waitpid(pid, 0)
    return {"started": 2}
'''


def _bundle(root: Path, env_id: str, *, head: str = IMPORT_MARK, tail: str = PROBES) -> Path:
    path = make_hostile_bundle(root, env_id)
    app = path / "app.py"
    app.write_text(head + app.read_text() + tail)
    return path


@pytest.fixture(scope="module")
def sandbox_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bundle(tmp_path_factory.mktemp("sandbox"), "sandbox_probe")


def _import_hostile(root: Path, kind: str) -> Path:
    """A bundle whose app.py ends its process (``exit``) or never finishes (``loop``) at import."""
    tail = {"exit": "\nimport os\nos._exit(7)\n", "loop": "\nwhile True:\n    pass\n"}[kind]
    return _bundle(root, f"import_{kind}", head="", tail=tail)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "awm_core.cli", *args]


def _cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "AWM_LOAD_PLUGINS": "envs", **extra}


async def _eventually(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


def _sleepers(token: str) -> list[int]:
    """Host pids of ``sleep TOKEN`` processes."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", token.encode()]:
            found.append(int(entry))
    return found


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- finding 3


@needs_bubblewrap
def test_tool_code_cannot_shell_out_read_host_files_write_or_reach_the_loopback(
    sandbox_path: Path, tmp_path: Path
) -> None:
    shelled = tmp_path / "shell-escaped"
    written = tmp_path / "written"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]

    async def run() -> None:
        async with EnvPool(sandbox_path, size=1, workers=1) as pool:
            inst = await pool.acquire()
            await inst.call_tool("probe_system", {"command": f"echo escaped > {shelled}"})
            passwd = await inst.call_tool("probe_read", {"path": "/etc/passwd"})
            wrote = await inst.call_tool("probe_write", {"path": str(written)})
            connect = await inst.call_tool("probe_connect", {"port": port})
            assert not shelled.exists(), "os.system in tool code wrote to the host"
            assert not passwd.is_error and "root:" not in json.dumps(passwd.content)
            assert "error" in wrote.content and not written.exists()
            assert "error" in connect.content, connect.content
            with pytest.raises(BlockingIOError):
                listener.accept()  # nothing ever reached the host's listening socket

    try:
        asyncio.run(run())
    finally:
        listener.close()


@needs_bubblewrap
def test_detached_children_die_with_their_worker_and_with_the_pool(sandbox_path: Path) -> None:
    first, second = (f"{random.randint(3000, 3999)}.{random.randint(10000, 99999)}" for _ in "12")

    async def run() -> None:
        async with EnvPool(sandbox_path, size=1, workers=1) as pool:
            inst = await pool.acquire()
            started = await inst.call_tool("probe_detach", {"token": first})
            assert not started.is_error, started.content
            assert await _eventually(lambda: len(_sleepers(first)) == 2, 10)
            crashed = await inst.call_tool("debug_crash", {})
            assert crashed.error_type == "environment_error"
            assert await _eventually(lambda: not _sleepers(first), 10), (
                "children a tool detached outlived its crashed worker"
            )
            started = await inst.call_tool("probe_detach", {"token": second})
            assert not started.is_error, started.content
            assert await _eventually(lambda: len(_sleepers(second)) == 2, 10)
        assert await _eventually(lambda: not _sleepers(second), 10), (
            "children a tool detached outlived the closed pool"
        )

    try:
        asyncio.run(run())
    finally:
        _kill(_sleepers(first) + _sleepers(second))


def test_a_crash_or_a_hang_resets_every_instance_of_the_worker_once_then_all_work(
    sandbox_path: Path,
) -> None:
    template = load_environment(sandbox_path)  # found, not imported: only .path is read

    async def run() -> None:
        async with WorkerPool(1, call_timeout=2.0) as pool:
            victim = await pool.create(template.path)
            bystander = await pool.create(template.path)
            assert victim.worker is bystander.worker
            fresh = await bystander.snapshot()
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error

            crashed = await victim.call_tool("debug_crash", {})
            assert crashed.is_error and crashed.error_type == "environment_error"
            assert "debug_crash crashed the environment worker" in crashed.content
            assert "exited with status 3" in crashed.content
            assert "reset to its initial state" in crashed.content
            # the victim's next call just works: no reset(), no "lost" message
            again = await victim.call_tool("get_book", {"book_id": 1})
            assert not again.is_error, again.content

            told = await bystander.call_tool("get_book", {"book_id": 2})
            assert told.is_error and told.error_type == "environment_error"
            assert "another instance's call to debug_crash" in told.content
            assert "reset to its initial state" in told.content
            assert "get_book was not run" in told.content
            assert not (await bystander.call_tool("get_book", {"book_id": 2})).is_error  # once
            assert await bystander.snapshot() == fresh  # recreated from the template
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error

            hung = await victim.call_tool("debug_hang", {})
            assert (
                hung.error_type == "environment_error"
                and "did not finish within 2 s" in hung.content
            )
            told = await bystander.call_tool("get_book", {"book_id": 2})
            assert told.is_error and "another instance's call to debug_hang" in told.content
            assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error
            assert not (await bystander.call_tool("get_book", {"book_id": 2})).is_error
            assert pool.replaced == 2

    asyncio.run(run())


def test_a_warm_spare_makes_replacement_immediate(sandbox_path: Path) -> None:
    async def run() -> None:
        async with EnvPool(sandbox_path, size=2, workers=1) as pool:
            workers = pool.worker_pool
            # the spare starts after the pool, then imports the pool's environment
            assert await _eventually(
                lambda: workers.spare_worker is not None and bool(workers.spare_worker.loaded), 60
            )
            spare_pid = workers.spare_worker.pid
            victim, bystander = await pool.acquire_many(2)
            crashed = await victim.call_tool("debug_crash", {})
            assert crashed.error_type == "environment_error"
            assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error
            told = await bystander.call_tool("get_book", {"book_id": 1})
            assert told.is_error and "another instance's call to debug_crash" in told.content
            # the warm spare (already started and loaded) took the dead worker's slot, so no
            # interpreter start stood between the crash and the answer; how fast that is,
            # is bench_envs.py's figure (nox -s perf), not a stopwatch here
            assert workers.replaced == 1
            assert [w.pid for w in workers.workers] == [spare_pid]

    asyncio.run(run())


# --------------------------------------------------------------------------- finding 4


def test_env_pool_with_workers_never_imports_app_py_in_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = _bundle(tmp_path, "never_imported_here")  # content no process has imported yet
    marker = tmp_path / "imported-here"
    monkeypatch.setenv(MARKER_ENV, str(marker))
    monkeypatch.setenv("AWM_TEST_SECRET", SECRET)

    async def run() -> None:
        pool = EnvPool(load_environment(fresh), size=2, workers=2)
        async with pool, pool.instance() as inst:
            assert {t.name for t in await inst.list_tools()} >= {"get_book", "probe_system"}
            seen = await inst.call_tool("debug_environ", {})
            assert not seen.is_error and SECRET not in json.dumps(seen.content)

    asyncio.run(run())
    assert not marker.exists(), marker.read_text()


def test_env_pool_reports_an_app_py_that_loops_at_import(tmp_path: Path) -> None:
    looping = _import_hostile(tmp_path, "loop")
    script = (
        "import asyncio, sys\n"
        "from awm_envs import EnvPool, load_environment\n"
        "async def main():\n"
        f"    async with EnvPool(load_environment({str(looping)!r}), size=2, workers=2):\n"
        "        pass\n"
        "try:\n"
        "    asyncio.run(main())\n"
        "except TimeoutError as exc:\n"
        "    print('refused:', exc)\n"
        "    sys.exit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=_cli_env(AWM_IMPORT_TIMEOUT_S="3"),
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "app.py did not finish importing within 3 s" in done.stdout


@needs_bubblewrap
def test_stdio_serve_honours_workers(sandbox_path: Path, tmp_path: Path) -> None:
    marker = tmp_path / "imported-in-server"
    params = StdioServerParameters(
        command=sys.executable,
        args=_cli("envs", "serve", str(sandbox_path), "--stdio", "--workers", "2")[1:],
        env=_cli_env(**{MARKER_ENV: str(marker), "AWM_TEST_SECRET": SECRET}),
    )

    async def run() -> None:
        async with mcp.Client(params) as client:
            assert "probe_system" in {t.name for t in (await client.list_tools()).tools}
            seen = await client.call_tool("debug_environ", {})
            assert not seen.is_error
            assert SECRET not in seen.content[0].text, "tool code saw the server's environment"
            crashed = await client.call_tool("debug_crash", {})
            assert crashed.is_error and "crashed the environment worker" in crashed.content[0].text
            assert not (await client.call_tool("get_book", {"book_id": 1})).is_error

    asyncio.run(run())
    assert not marker.exists(), marker.read_text()


@contextlib.asynccontextmanager
async def _cli_server(path: Path, workers: int, **env: str) -> AsyncIterator[str]:
    """``awm envs serve PATH --port P --workers N`` in a subprocess; yields its /mcp URL."""
    port = free_port()
    server = subprocess.Popen(
        _cli("envs", "serve", str(path), "--port", str(port), "--workers", str(workers)),
        env=_cli_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, server.stderr.read() if server.stderr else ""
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                await asyncio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(10)
        if server.poll() is None:
            server.kill()


def test_http_serve_with_workers_never_imports_app_py_in_the_server(
    sandbox_path: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "imported-in-server"

    async def run() -> None:
        env = {MARKER_ENV: str(marker), "AWM_TEST_SECRET": SECRET}
        async with _cli_server(sandbox_path, 2, **env) as url, mcp.Client(url) as client:
            seen = await client.call_tool("debug_environ", {})
            assert not seen.is_error and SECRET not in seen.content[0].text

    asyncio.run(run())
    assert not marker.exists(), marker.read_text()


def test_http_serve_with_workers_reports_an_app_py_that_loops_at_import(tmp_path: Path) -> None:
    looping = _import_hostile(tmp_path, "loop")
    done = subprocess.run(
        _cli("envs", "serve", str(looping), "--port", str(free_port()), "--workers", "1"),
        capture_output=True,
        text=True,
        timeout=60,
        env=_cli_env(AWM_IMPORT_TIMEOUT_S="3"),
    )
    assert done.returncode != 0
    assert f"{looping / 'app.py'} did not finish importing within 3 s" in done.stderr


# --------------------------------------------------------------------------- finding 5


def test_explicit_mcp_instances_recover_after_their_worker_dies(sandbox_path: Path) -> None:
    async def run() -> None:
        async with (
            _cli_server(sandbox_path, 1) as url,  # one worker: both instances share it
            mcp.Client(f"{url}/i/bystander") as bystander,
            mcp.Client(f"{url}/i/victim") as victim,
        ):
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error
            crashed = await victim.call_tool("debug_crash", {})
            assert crashed.is_error
            assert "debug_crash crashed the environment worker" in crashed.content[0].text
            for _ in range(2):  # recovered: MCP has no reset, and none is needed
                assert not (await victim.call_tool("get_book", {"book_id": 1})).is_error
            told = await bystander.call_tool("get_book", {"book_id": 2})
            text = told.content[0].text
            assert told.is_error and "[environment_error]" in text
            assert "another instance's call to debug_crash" in text
            assert "get_book was not run" in text
            # its state was reset: copy 4 can be checked out again
            assert not (await bystander.call_tool("checkout_copy", {"copy_id": 4})).is_error

    asyncio.run(run())


# --------------------------------------------------------------------------- finding 9


@pytest.mark.parametrize("kind", ["exit", "loop"])
@pytest.mark.parametrize("command", ["validate", "show", "call"])
def test_commands_refuse_an_app_py_that_exits_or_loops_at_import(
    tmp_path: Path, command: str, kind: str
) -> None:
    bundle = _import_hostile(tmp_path, kind)
    args = {
        "validate": ["envs", "validate", "--json", str(bundle)],
        "show": ["envs", "show", str(bundle)],
        "call": ["envs", "call", str(bundle), "get_book", "--args", '{"book_id": 1}'],
    }[command]
    done = subprocess.run(
        _cli(*args),
        capture_output=True,
        text=True,
        timeout=90,
        env=_cli_env(AWM_IMPORT_TIMEOUT_S="3", COLUMNS="400"),
    )
    output = " ".join((done.stdout + done.stderr).split())
    assert done.returncode not in (0, 7), (done.returncode, output)
    assert "app.py" in output, output
    if kind == "exit":
        assert "exited with status 7" in output, output
    else:
        assert "did not finish importing within 3 s" in output, output


def test_a_bundle_copy_is_shipped_not_mounted(sandbox_path: Path, tmp_path: Path) -> None:
    """Workers load their own copy: the host folder can change (or go) under a running pool."""
    copy = tmp_path / "copy"
    shutil.copytree(sandbox_path, copy)

    async def run() -> None:
        async with WorkerPool(1) as pool:
            inst = await pool.create(copy)
            shutil.rmtree(copy)
            assert not (await inst.call_tool("get_book", {"book_id": 1})).is_error
            seen = await inst.call_tool("probe_read", {"path": str(sandbox_path / "app.py")})
            if pool.isolation is not None and pool.isolation.isolated:
                assert seen.content == {"error": "FileNotFoundError"}  # host folders unseen

    asyncio.run(run())


def test_a_worker_killed_from_outside_is_reported_as_such_not_as_the_call_s_crash(
    sandbox_path: Path,
) -> None:
    async def run() -> tuple[str, str]:
        async with EnvPool(sandbox_path, size=2, workers=1, call_timeout=60) as pool:
            workers = pool.worker_pool
            running, bystander = await pool.acquire_many(2)
            call = asyncio.create_task(running.call_tool("debug_hang", {"seconds": 30}))
            await await_until(lambda: workers.workers[0].inflight is not None, what="the call")
            os.kill(workers.workers[0].proc.pid, signal.SIGKILL)  # from outside, mid-call
            result = await call
            told = await bystander.call_tool("get_book", {"book_id": 1})
            assert result.is_error and told.is_error
            return result.content, told.content

    result, told = asyncio.run(run())
    assert "killed from outside while it ran debug_hang" in result, result
    assert "debug_hang crashed" not in result
    assert "killed from outside" in told and "another instance's call to debug_hang" in told, told
