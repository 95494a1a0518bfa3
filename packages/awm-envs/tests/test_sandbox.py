"""awm_envs.sandbox: the one sandbox for generated code, tested with hostile jobs.

``probe:run_python`` runs arbitrary code with full builtins and no Python-level
policy at all, so everything asserted here is held by the OS layer
(bubblewrap, rlimits, fork per job), not by good behaviour.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from awm_core.testing import wait_until
from awm_envs.sandbox import (
    ForkServer,
    FrameReader,
    IsolationUnavailable,
    JobPool,
    Limits,
    ProtocolError,
    describe_exit,
    detect,
)
from awm_envs.sandbox.wire import encode

isolated = pytest.mark.skipif(not detect().isolated, reason=f"no OS isolation: {detect().reason}")


def _sleepers(tag: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmd.strip() == f"sleep {tag}":
                found.append(pid)
    return found


@pytest.fixture(scope="module")
def python_jobs() -> Iterator[ForkServer]:
    with ForkServer(
        "awm_envs.sandbox.probe:run_python",
        limits=Limits(cpu_s=1, wall_s=2, memory_bytes=256 * 1024**2),
    ) as server:
        yield server


def run(server: ForkServer, code: str) -> dict[str, object]:
    reply, _ = server.run({"code": code})
    return reply


# --------------------------------------------------------------------------- the wire


def test_frames_decode_incrementally_byte_by_byte() -> None:
    data = encode({"a": 1}, [b"xyz", b""]) + encode({"b": 2})
    reader = FrameReader()
    got = []
    for i in range(len(data)):
        got += reader.feed(data[i : i + 1])
    assert got == [({"a": 1}, [b"xyz", b""]), ({"b": 2}, [])]


@pytest.mark.parametrize(
    "data",
    [
        (1 << 31).to_bytes(4, "big"),  # a frame over the limit: never allocated
        (5).to_bytes(4, "big") + b"nope!",  # not JSON
        (2).to_bytes(4, "big") + b"[]",  # not an object
    ],
)
def test_garbage_from_a_sandbox_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        FrameReader().feed(data)


def test_describe_exit_names_signals_and_statuses() -> None:
    assert "segmentation fault" in describe_exit(-11)
    assert "segmentation fault" in describe_exit(128 + 11)  # bwrap's way of saying it
    assert "status 7" in describe_exit(7)
    assert "CPU" in describe_exit(-24)


# --------------------------------------------------------------------------- fork per job


def test_each_job_starts_clean_whatever_the_previous_one_changed(python_jobs) -> None:
    assert (
        run(python_jobs, "import builtins; builtins.abs = lambda x: 0; result = 1")["status"]
        == "ok"
    )
    assert (
        run(python_jobs, "import json; json.loads = lambda *a, **k: 'x'; result = 1")["status"]
        == "ok"
    )
    assert (
        run(python_jobs, "open('/tmp/note', 'w').write('left behind'); result = 1")["status"]
        == "ok"
    )
    gone = run(python_jobs, "import os; result = os.path.exists('/tmp/note')")
    assert gone == {"status": "ok", "result": "False"}
    ok = run(python_jobs, "import json; result = (abs(-2), json.loads('1'))")
    assert ok == {"status": "ok", "result": "(2, 1)"}


def test_an_infinite_loop_is_a_timeout_and_the_next_job_runs(python_jobs) -> None:
    reply = run(python_jobs, "while True: pass")
    assert reply["kind"] == "timeout"  # stopped by its limit (a hang would hit pytest's timeout)
    assert run(python_jobs, "result = 2")["status"] == "ok"


def test_a_memory_bomb_hits_the_memory_limit(python_jobs) -> None:
    reply = run(python_jobs, "x = bytearray(1024 ** 3)")
    assert reply["kind"] == "memory"
    assert run(python_jobs, "result = 3")["status"] == "ok"


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import os; os._exit(7)", "exited with status 7"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", "segmentation fault"),
        ("raise SystemExit(3)", "SystemExit"),
    ],
)
def test_a_dying_job_is_explained(python_jobs, code: str, needle: str) -> None:
    reply = run(python_jobs, code)
    assert reply["status"] == "error"
    assert needle in str(reply["message"]) + str(reply.get("traceback"))
    assert run(python_jobs, "result = 4")["status"] == "ok"


def test_nothing_a_job_starts_outlives_it(python_jobs) -> None:
    code = (
        "import subprocess\n"
        "subprocess.Popen(['sleep', '4242'], start_new_session=True)\n"
        "subprocess.Popen(['sh', '-c', '(setsid sleep 4242 &) ; sleep 4242 &'])\n"
        "result = 1"
    )
    if not detect().isolated:
        code = "import subprocess\nsubprocess.Popen(['sleep', '4242'])\nresult = 1"
    assert run(python_jobs, code)["status"] == "ok"
    assert run(python_jobs, "result = 5")["status"] == "ok"
    wait_until(lambda: _sleepers("4242") == [], what="the job's detached processes killed")


def test_a_template_killed_from_outside_is_replaced(python_jobs) -> None:
    assert python_jobs.proc is not None
    os.kill(python_jobs.proc.pid, 9)
    python_jobs.proc.proc.wait()
    assert run(python_jobs, "result = 6") == {"status": "ok", "result": "6"}
    assert python_jobs.restarts >= 1


def test_a_sandbox_started_from_a_short_lived_thread_survives_it() -> None:
    """--die-with-parent follows the starting *thread*: starting must not tie the sandbox to it."""
    server = ForkServer("awm_envs.sandbox.probe:echo")
    try:
        thread = threading.Thread(target=server.start)
        thread.start()
        thread.join()
        time.sleep(0.3)
        assert server.proc is not None and server.proc.alive()
        assert server.run({"n": 1})[0] == {"status": "ok", "echo": {"n": 1}}
    finally:
        server.close()


def test_a_job_pool_runs_jobs_in_parallel_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    with JobPool("awm_envs.sandbox.probe:echo", size=2) as pool, ThreadPoolExecutor(4) as ex:
        replies = list(ex.map(lambda i: pool.run({"i": i}, [b"ab"]), range(12)))
    assert [r[0]["echo"]["i"] for r in replies] == list(range(12))
    assert all(r[1] == [b"ba"] for r in replies)


# --------------------------------------------------------------------------- the OS layer


@isolated
def test_the_sandbox_sees_no_host_files_secrets_or_network(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    secret = tmp_path / "secret.txt"
    secret.write_text("host data")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    code = f"""
import os, socket
out = {{}}
for name, fn in [
    ("passwd", lambda: open("/etc/passwd").read()),
    ("host file", lambda: open({str(secret)!r}).read()),
    ("write cwd", lambda: open({str(Path.cwd() / "escaped")!r}, "w").write("x")),
    ("write packages", lambda: open({str(Path(pytest.__file__).parent / "escaped")!r}, "w").write("x")),
    ("write root", lambda: open("/escaped", "w").write("x")),
    ("loopback", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1)),
]:
    try:
        fn()
        out[name] = "allowed"
    except Exception as exc:
        out[name] = type(exc).__name__
out["env"] = sorted(os.environ)
result = out
"""
    try:
        with ForkServer("awm_envs.sandbox.probe:run_python") as server:
            reply = run(server, code)
    finally:
        listener.close()
    seen = eval(str(reply["result"]))  # noqa: S307 - our own repr of a dict of strings
    assert seen["passwd"] != "allowed" and seen["host file"] != "allowed"
    assert seen["write packages"] != "allowed" and seen["write root"] != "allowed"
    # the working directory may sit under /tmp (CI clones there): inside, that path is the
    # sandbox's own private tmpfs, so a write may "succeed" but never reaches the host
    assert not (Path.cwd() / "escaped").exists()
    assert not (Path(pytest.__file__).parent / "escaped").exists()
    assert seen["loopback"] != "allowed"
    assert "OPENAI_API_KEY" not in seen["env"]


def test_without_bubblewrap_the_process_layer_still_contains_jobs(monkeypatch) -> None:
    monkeypatch.setenv("AWM_SANDBOX_ISOLATION", "off")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with ForkServer(
        "awm_envs.sandbox.probe:run_python", limits=Limits(cpu_s=1, wall_s=2)
    ) as server:
        assert not server.isolation.isolated
        assert run(server, "while True: pass")["kind"] == "timeout"
        env = run(server, "import os; result = sorted(os.environ)")
        assert "OPENAI_API_KEY" not in str(env["result"])


def test_isolation_can_be_required(monkeypatch) -> None:
    monkeypatch.setenv("AWM_SANDBOX_ISOLATION", "off")
    monkeypatch.setenv("AWM_REQUIRE_ISOLATION", "1")
    with pytest.raises(IsolationUnavailable, match="AWM_REQUIRE_ISOLATION"):
        ForkServer("awm_envs.sandbox.probe:echo")


def test_awm_envs_sandbox_reports_what_code_inside_can_do() -> None:
    """The command docs/security.md tells users to run first."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "awm_core.cli", "envs", "sandbox", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["isolation"] == detect().kind
    seen = report["seen_from_inside"]
    assert "OPENAI_API_KEY" not in seen["environment variables"]
    if detect().isolated:
        assert seen["read /etc/passwd"].startswith("blocked")
        assert seen["connect to the internet"].startswith("blocked")
        # no privilege inside, whatever uid runs this test (CI: root)
        assert seen["uid (inside)"] == "65534"
        assert int(seen["effective capabilities"], 16) == 0
        assert seen["seccomp"].startswith("filter")
        for attack in (
            "write another process's memory",
            "ptrace another process",
            "signal another process",
            "unshare a user namespace",
            "mount",
            "chroot",
        ):
            assert seen[attack].startswith("blocked"), (attack, seen[attack])
    assert report["process_bound"]
    refused = subprocess.run(
        [sys.executable, "-m", "awm_core.cli", "envs", "sandbox", "--require-isolation"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "AWM_SANDBOX_ISOLATION": "off"},
    )
    assert refused.returncode == 1 and "required" in refused.stderr


@isolated
def test_tmp_is_emptied_around_folders_granted_from_the_hosts_tmp(tmp_path: Path) -> None:
    """A venv or bundle under the host's /tmp (CI clones there) is mounted inside the
    sandbox's private /tmp: clean-up must remove what jobs write around it, not walk it."""
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "keep.txt").write_text("host file")
    planted = tmp_path / "planted.txt"  # beside the mount, on the sandbox's own tmpfs
    with ForkServer("awm_envs.sandbox.probe:run_python", ro_paths=[granted]) as server:
        first = run(
            server,
            f"open({str(planted)!r}, 'w').write('x'); open('/tmp/junk', 'w').write('x'); result = 1",
        )
        assert first["status"] == "ok", first
        seen = run(
            server,
            "import os\n"
            f"result = (os.path.exists({str(planted)!r}), os.path.exists('/tmp/junk'),"
            f" open({str(granted / 'keep.txt')!r}).read())",
        )
    assert seen == {"status": "ok", "result": "(False, False, 'host file')"}
    assert (granted / "keep.txt").read_text() == "host file"
    assert not planted.exists()


def test_serve_help_says_in_process_is_for_trusted_code_only() -> None:
    """Finding 8: nothing told users that workers=0 runs app.py in the server process."""
    from click.testing import CliRunner

    from awm_envs.cli.main import envs

    text = " ".join(CliRunner().invoke(envs, ["serve", "--help"]).output.split())
    assert "any other bundle runs in a sandboxed worker" in text
    assert "--run-untrusted-code-in-process" in text and "read your files and API keys" in text
    assert "docs/security.md" in text


def test_the_verifier_job_template_stays_light() -> None:
    """Every module the template imports is copied into each forked job: no pydantic, no pluggy.

    Of awm-core only the package and its lazy-export helper (the packages' ``__init__``
    resolve their names through it), never its models, registry or runtime.
    """
    code = (
        "import sys, awm_envs.verifiers.job, awm_envs.sandbox.forkhost\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'pydantic', 'fastapi', 'pluggy'}\n"
        "core = {m for m in sys.modules if m.startswith('awm_core')} - {'awm_core', 'awm_core.lazy'}\n"
        "print(','.join(sorted(heavy | core)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGKILL])
def test_a_spare_damaged_from_outside_is_replaced_and_the_job_runs_once_more(sig) -> None:
    """A stopped or killed warm spare is never reported as the innocent job's timeout or crash."""
    from awm_envs.sandbox.forkserver import find_in_namespace

    with ForkServer("awm_envs.sandbox.probe:run_python", limits=Limits(wall_s=5)) as server:
        assert run(server, "result = 1")["status"] == "ok"
        wait_until(lambda: bool(server._spares), what="a warm spare")
        assert server.proc is not None
        spare = server._spares[0]
        host_pid = find_in_namespace(server.proc.pid, spare.pid)
        if host_pid is None:
            pytest.skip("the spares share the host's PID namespace here (no bubblewrap)")
        os.kill(host_pid, sig)
        assert run(server, "result = 2") == {"status": "ok", "result": "2"}
        assert server.damaged == 1
        assert run(server, "result = 3") == {"status": "ok", "result": "3"}
