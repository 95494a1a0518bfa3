"""Verdicts that hold under concurrency: first use from many threads, distinct inputs.

Each scenario runs in a fresh interpreter, because the bug it guards against lives
only there: the first lookups of a process, made from several threads at once,
used to read a half-filled plugin registry and turn real verdicts into
"no known signature" (reward 0, no error). Every concurrent result is compared
with the one the same job gives serially, so mixed-up results fail too.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _fresh(script: str, timeout: float = 240) -> dict:
    """Run ``script`` in a new interpreter with no plugin loaded yet; its last line is JSON."""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


REGISTRY_RACE = """
import json, threading
from awm_core import registry
from awm_core import list_backends, list_reward_functions

lookups = {
    "signatures": lambda: sorted(s.name for s in registry.get_verifier_signatures()),
    "judges": lambda: sorted(registry.collect(registry.JUDGES)),
    "rewards": lambda: sorted(list_reward_functions()),
    "backends": lambda: sorted(list_backends()),
    "benchmarks": lambda: registry.list_benchmarks(),
    "env_sources": lambda: sorted(registry.get_env_sources()),
}
N = 8
barrier = threading.Barrier(N)
seen = [None] * N

def work(i):
    barrier.wait()  # all threads make their first lookup together
    seen[i] = {kind: f() for kind, f in lookups.items()}

threads = [threading.Thread(target=work, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"threads": seen, "serial": {k: f() for k, f in lookups.items()}}))
"""


@pytest.mark.parametrize("attempt", range(3))
def test_every_thread_sees_the_whole_registry_on_first_use(attempt: int) -> None:
    out = _fresh(REGISTRY_RACE)
    serial = out["serial"]
    # the serial view is the real one: every built-in kind is populated
    assert {"native", "verify_task", "verify_task_completion"} <= set(serial["signatures"])
    assert {"code", "llm", "code+llm"} <= set(serial["judges"])
    assert "default" in serial["rewards"] and "scripted" in serial["backends"]
    assert {"bfcl", "tau2"} <= set(serial["benchmarks"])
    for i, view in enumerate(out["threads"]):
        assert view == serial, f"thread {i} saw a partial registry: {view}"


MIXED_VERIFIERS = """
import json, sqlite3
from concurrent.futures import ThreadPoolExecutor
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

def image(cancelled):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT)")
    conn.executemany("INSERT INTO orders VALUES (?, ?)",
                     [(i, "cancelled" if i in cancelled else "pending") for i in range(1, 7)])
    conn.commit()
    data = conn.serialize()
    conn.close()
    return data

NATIVE = '''
def verify_cancel(initial, final, final_answer):
    after = final.execute("SELECT status FROM orders WHERE id = {t}").fetchone()[0]
    return {{"complete": after == "cancelled", "evidence": {{"id": {t}, "after": after}}}}
'''
COMPLETION = '''
import sqlite3
def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    conn = sqlite3.connect(final_db_path)
    status = conn.execute("SELECT status FROM orders WHERE id = {t}").fetchone()[0]
    conn.close()
    return {{"result": "complete" if status == "cancelled" else "others"}}
'''
EVIDENCE = '''
import sqlite3
def verify_task(initial_db_path, final_db_path):
    conn = sqlite3.connect(final_db_path)
    rows = conn.execute("SELECT id FROM orders WHERE status = 'cancelled'").fetchall()
    conn.close()
    return {{"target": {t}, "cancelled": [r[0] for r in rows]}}
'''
initial = image(set())
jobs = []
for k in range(48):
    target = k % 6 + 1
    cancelled = {target} if k % 4 else {target % 6 + 1}  # every 4th job: the wrong order
    source = (NATIVE, COMPLETION, EVIDENCE)[k % 3].format(t=target)
    jobs.append((source, image(cancelled)))

def run(pool, job):
    source, final = job
    r = pool.run(source, initial=initial, final=final, final_answer="done")
    return [r.ok, r.complete, r.signature, r.evidence, r.error and r.error.message]

limits = VERIFIER_LIMITS.with_(cpu_s=5.0, wall_s=20.0, memory_bytes=256 * 1024 * 1024)
with VerifierPool(size=2, limits=limits) as pool:
    with ThreadPoolExecutor(8) as ex:
        concurrent = list(ex.map(lambda j: run(pool, j), jobs))
    serial = [run(pool, j) for j in jobs]
print(json.dumps({"concurrent": concurrent, "serial": serial}))
"""


def test_mixed_verifiers_on_eight_threads_match_their_serial_verdicts() -> None:
    out = _fresh(MIXED_VERIFIERS)
    serial, concurrent = out["serial"], out["concurrent"]
    assert all(ok for ok, *_ in serial), [r for r in serial if not r[0]]
    # the jobs really differ: both verdicts and all three signatures occur
    assert {r[1] for r in serial} == {True, False, None}
    assert {r[2] for r in serial} == {"native", "verify_task_completion", "verify_task"}
    mismatched = [
        (k, c, s) for k, (c, s) in enumerate(zip(concurrent, serial, strict=True)) if c != s
    ]
    assert not mismatched, f"{len(mismatched)} of 48 concurrent verdicts differ: {mismatched[:3]}"
