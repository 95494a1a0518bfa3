"""The sandbox holds against a determined attacker, as root and as an unprivileged user.

One hostile program (tests/attacks.py) writes into the memory of every process it
can see, ptrace-attaches to them, SIGSTOPs and SIGKILLs each and its process
group, unshares, mounts and chroots, leaves files in /dev, /dev/shm and /tmp for
the next job, fills both tmpfs, forks without end and reads secrets beside the
host's script and on its PYTHONPATH. It runs as a verifier in a
:class:`VerifierPool` (after switching the Python policy off) and as tool code in
sandboxed workers; every later innocent job must still get its own right answer.

CI runs as root; :func:`test_the_same_attacks_hold_for_an_unprivileged_user`
runs this module again under uid 65534, so both cases stay proven.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from attacks import ATTACK, FORK_CEILING, VERIFIER, attack_args, attack_bundle

from awm_envs.sandbox import detect
from awm_envs.sandbox.cgroups import bound
from awm_envs.sandbox.isolation import SHM_BYTES
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

ROOT = Path(__file__).resolve().parents[1]
MEMORY = 128 * 1024 * 1024  # the job's memory limit, and so the cap of its /tmp
PROCESSES = 64  # awm's default process limit for generated code
LIMITS = VERIFIER_LIMITS.with_(cpu_s=30.0, wall_s=90.0, memory_bytes=MEMORY)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not detect().isolated, reason=f"no OS isolation here: {detect().reason}"),
]

HONEST = """
def verify_cancel(initial, final, final_answer):
    status = final.execute("SELECT status FROM orders WHERE id = {id}").fetchone()[0]
    return {{"complete": status == "cancelled", "evidence": {{"id": {id}, "status": status}}}}
"""


def _image(cancelled: set[int]) -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT)")
    conn.executemany(
        "INSERT INTO orders VALUES (?, ?)",
        [(i, "cancelled" if i in cancelled else "pending") for i in range(1, 7)],
    )
    conn.commit()
    image = conn.serialize()
    conn.close()
    return image


def assert_contained(
    seen: dict[str, Any], *, fresh_tmp: bool = True, processes: int = PROCESSES
) -> None:
    """Everything the attack tried failed (``fresh_tmp``: /tmp is a new one for this job)."""
    assert seen["mem_writable"] == [], f"wrote into the memory of {seen['mem_writable']}"
    assert seen["ptraced"] == [], f"ptrace-attached to {seen['ptraced']}"
    assert seen["signalled"] == [], f"signalled {seen['signalled']} (visible: {seen['visible']})"
    assert not seen["unshare"] and not seen["mount"] and not seen["chroot"], seen
    before = seen["marker_from_before"]
    assert before["/dev"] is False and before["/dev/shm"] is False, before
    if fresh_tmp:
        assert before["/tmp"] is False, before
    assert seen["filled_mib"]["/dev/shm"] <= SHM_BYTES >> 20, seen["filled_mib"]
    assert seen["filled_mib"]["/tmp"] <= MEMORY >> 20, seen["filled_mib"]
    if not bound(processes).startswith("none"):
        assert seen["forked"] < processes + 8 < FORK_CEILING, seen["forked"]
    assert all(v is None for v in seen["secrets"].values()), seen["secrets"]


def _honest_batch(pool: VerifierPool) -> list[tuple[bool | None, Any]]:
    """Twelve innocent verifications with different right answers."""
    out = []
    for k in range(12):
        target = k % 6 + 1
        final = _image({target} if k % 3 else set())
        r = pool.run(HONEST.format(id=target), initial=_image(set()), final=final)
        assert r.ok, f"innocent verification {k} was blamed: {r.error}"
        out.append((r.complete, r.evidence))
    return out


def test_a_hostile_verifier_reaches_nothing_and_later_verdicts_stay_right() -> None:
    expected = [(bool(k % 3), {"id": k % 6 + 1, "status": "cancelled" if k % 3 else "pending"})
                for k in range(12)]  # fmt: skip
    with VerifierPool(size=1, limits=LIMITS) as pool:  # one template: the attack shares it
        assert _honest_batch(pool) == expected
        for run in range(2):  # the second run finds nothing the first one left behind
            r = pool.run(
                VERIFIER,
                initial=_image(set()),
                final=_image(set()),
                final_answer=attack_args([], f"run {run}"),
            )
            assert r.ok, r.error
            assert r.evidence["visible"], "the job saw no other process: nothing was attacked"
            assert_contained(r.evidence)
            assert _honest_batch(pool) == expected


def test_hostile_tool_code_in_a_worker_reaches_nothing(tmp_path: Path) -> None:
    from awm_envs import EnvPool

    bundle = attack_bundle(tmp_path)

    async def run() -> dict[str, Any]:
        async with EnvPool(
            bundle, size=2, workers=2, call_timeout=120, memory_limit=MEMORY
        ) as pool:
            attacker, bystander = await pool.acquire_many(2)
            before = await bystander.call_tool("checkout_copy", {"copy_id": 4})
            assert not before.is_error, before.content
            r = await attacker.call_tool("debug_attack", {"secret_paths": "", "marker": "m"})
            assert not r.is_error, r.content
            # the other worker kept its instance's state, and the attacker's worker still serves
            after = await bystander.call_tool("checkout_copy", {"copy_id": 4})
            assert after.is_error and after.error_type == "conflict", after.content
            again = await attacker.call_tool("get_book", {"book_id": 2})
            assert not again.is_error, again.content
            return dict(r.content)

    from awm_envs.pool.workers import WORKER_PROCESSES

    # a worker's tool code is the worker process itself (PID 1 of its own namespace): no
    # other worker, instance process or host process is visible to it to attack
    seen = asyncio.run(run())
    assert seen["visible"] == []
    assert_contained(seen, processes=WORKER_PROCESSES)


def test_hostile_tool_code_on_the_ray_backend_runs_in_the_same_sandbox(tmp_path: Path) -> None:
    """Scaling out keeps the OS layer: the tool runs in a sandboxed worker inside the actor."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray = pytest.importorskip("ray", reason="the Ray backend needs the awm-envs[ray] extra")
    from awm_envs import EnvPool
    from awm_envs.pool.workers import WORKER_PROCESSES

    bundle = attack_bundle(tmp_path)

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with EnvPool(
            bundle, size=2, workers=1, backend="ray", call_timeout=120, memory_limit=MEMORY
        ) as pool:
            attacker, bystander = await pool.acquire_many(2)
            environ = await attacker.call_tool("debug_environ", {})
            r = await attacker.call_tool("debug_attack", {"secret_paths": "", "marker": "m"})
            assert not r.is_error, r.content
            ok = await bystander.call_tool("get_book", {"book_id": 1})
            assert not ok.is_error, ok.content
            return dict(r.content), dict(environ.content)

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        seen, environ = asyncio.run(run())
    finally:
        ray.shutdown()
    assert seen["visible"] == []  # PID 1 of its own namespace, not a process of Ray's
    assert_contained(seen, processes=WORKER_PROCESSES)
    # the scrubbed environment of a sandbox, not the actor's (Ray's variables, the host's keys)
    assert environ["environ"].get("AWM_INSIDE_SANDBOX") == "1", environ
    assert not any(k.startswith("RAY_") for k in environ["environ"]), environ


def test_secrets_beside_the_host_script_and_on_its_pythonpath_stay_invisible(
    tmp_path: Path,
) -> None:
    """A trainer started as ``python project/train.py`` from another folder, with PYTHONPATH."""
    project, libdir, elsewhere = tmp_path / "project", tmp_path / "libdir", tmp_path / "elsewhere"
    for folder in (project, libdir, elsewhere):
        folder.mkdir()
    secrets = [project / ".env", libdir / ".env", elsewhere / ".env"]
    for path in secrets:
        path.write_text("OPENAI_API_KEY=sk-do-not-leak\n")
    bundle = attack_bundle(tmp_path)
    (project / "train.py").write_text(
        f"""
import asyncio, json, sqlite3, sys
sys.path.insert(1, {str(Path(__file__).parent)!r})
from attacks import VERIFIER, attack_args
from awm_envs import EnvPool
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

conn = sqlite3.connect(":memory:")
conn.execute("CREATE TABLE t (x)")
image = conn.serialize()
paths = {[str(p) for p in secrets]!r}
with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=30, wall_s=90, memory_bytes={MEMORY})) as pool:
    verifier = pool.run(VERIFIER, initial=image, final=image, final_answer=attack_args(paths, "m"))

async def tool():
    async with EnvPool({str(bundle)!r}, size=1, workers=1, call_timeout=120) as pool:
        async with pool.instance() as inst:
            r = await inst.call_tool("debug_attack", {{"secret_paths": ",".join(paths), "marker": "m"}})
            return r.content
print("RESULT " + json.dumps({{"verifier": verifier.evidence, "error": verifier.error and
                               verifier.error.message, "tool": asyncio.run(tool())}}))
"""
    )
    env = {**os.environ, "PYTHONPATH": str(libdir)}
    done = subprocess.run(
        [sys.executable, str(project / "train.py")],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert result["error"] is None, result["error"]
    for channel in ("verifier", "tool"):
        seen = result[channel]
        assert set(seen["secrets"]) == {str(p) for p in secrets}
        assert all(v is None for v in seen["secrets"].values()), (channel, seen["secrets"])


def test_a_shop_copy_with_an_attacking_verifier_keeps_every_other_task_proven(
    tmp_path: Path,
) -> None:
    from awm_envs.validation.validate import resolve_env_dir, validate_environment

    shop = shutil.copytree(resolve_env_dir("shop"), tmp_path / "shop_attacked")
    manifest = json.loads((shop / "manifest.json").read_text())
    manifest["id"] = "shop_attacked"
    (shop / "manifest.json").write_text(json.dumps(manifest))
    tasks = json.loads((shop / "tasks.json").read_text())
    hostile_task = tasks[0]["id"]
    tasks[0]["verifier"] = "verify_attack_everything"
    (shop / "tasks.json").write_text(json.dumps(tasks))
    with (shop / "verifiers.py").open("a") as fh:
        fh.write(
            "\n\n"
            + ATTACK
            + """
def verify_attack_everything(initial, final, final_answer):
    g = __import__.__globals__
    g["STATE"].active = False
    g["SAFE_BUILTINS"]["bool"] = lambda x: not x  # in this fork only: gone with it
    run_attack(g["_real_import"], [], "validate")
    return {"complete": True}
"""
        )
    # every task on one template
    with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=30, wall_s=90)) as pool:
        result = validate_environment(shop, verifier_pool=pool, sandbox=True, check_leaks=False)
    by_id = {t.task_id: t for t in result.tasks}
    others = [t for tid, t in by_id.items() if tid != hostile_task]
    assert len(others) == len(tasks) - 1 >= 9
    assert all(t.passed for t in others), [(t.task_id, t.problems) for t in others if not t.passed]
    assert not by_id[hostile_task].passed and by_id[hostile_task].problems


def _unprivileged_prefix() -> list[str] | None:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    return [setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"]


def test_the_same_attacks_hold_for_an_unprivileged_user() -> None:
    if os.getuid() != 0:
        pytest.skip("this run is already unprivileged: the tests above are the proof")
    prefix = _unprivileged_prefix()
    if prefix is None:
        pytest.fail("setpriv (util-linux) is needed to drop to an unprivileged uid")
    reach = subprocess.run([*prefix, sys.executable, "-c", "pass"], capture_output=True)
    if reach.returncode != 0:
        message = (
            f"uid 65534 cannot run {sys.executable} ({reach.stderr.decode().strip()}); "
            "let it reach the interpreter (CI does `chmod o+x /root`)"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    import tempfile

    # pytest's own temporary folders are root's alone: a folder the other uid may write to
    work = Path(tempfile.mkdtemp(prefix="awm-unprivileged-"))
    os.chmod(work, 0o777)
    env = {
        **os.environ,
        "HOME": str(work),
        "AWM_CACHE_DIR": str(work / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [*prefix, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", f"--basetemp={work / 'bt'}", "-o", "testpaths=",
         __file__, "-k", "not unprivileged"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    summary = done.stdout.strip().splitlines()[-1]
    assert "5 passed" in summary and "skipped" not in summary, summary
