"""Benchmark: per-verification overhead of the sandbox pool; prints one JSON document.

Overhead is measured with a trivial native verifier (two ``count(*)`` queries),
so the figure is the sandbox's own cost: shipping two database images to a
fresh process forked for this one verification, deserializing them, hardening
the connections, running the code under the audit policy, and returning JSON.
The official ``paths`` convention adds writing two private file copies.

Two rates: ``native_signature`` sends verifications back to back (the pool is
saturated, so the warm-up of each next process competes with the current
verification for the CPU); ``native_unsaturated`` leaves 10 ms between them, as
when verifications trail rollouts, and is the latency one verification adds.
``fresh_process_page_faults`` is what a fresh fork pays before its first job
(each write to a page shared with the template copies it). In-process ``exec``
of the same verifier is reported as the floor the official release pays (with
no containment at all).

Run: ``uv run python packages/awm-verify/benchmarks/bench_sandbox.py``.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import time

from awm_envs.verifiers.pool import VerifierPool

NATIVE = """
def verify_count(initial, final, final_answer):
    a = initial.execute("SELECT count(*) FROM items").fetchone()[0]
    b = final.execute("SELECT count(*) FROM items").fetchone()[0]
    return {"complete": b == a + 1, "evidence": {"before": a, "after": b}}
"""

OFFICIAL = """
import sqlite3
def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    a = sqlite3.connect(initial_db_path).execute("SELECT count(*) FROM items").fetchone()[0]
    b = sqlite3.connect(final_db_path).execute("SELECT count(*) FROM items").fetchone()[0]
    return {"result": "complete" if b == a + 1 else "others"}
"""


TARGET_BACK_TO_BACK_MS = 3.0
TARGET_TRAILING_MS = 2.0


def images(rows: int) -> tuple[bytes, bytes]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
    conn.executemany(
        "INSERT INTO items VALUES (?,?,?)", [(i, f"item {i}", i * 0.5) for i in range(rows)]
    )
    conn.commit()
    before = conn.serialize()
    conn.execute("INSERT INTO items VALUES (?,?,?)", (rows, "new", 1.0))
    conn.commit()
    return before, conn.serialize()


def measure(fn, n: int, gap_s: float = 0.0) -> dict[str, float]:
    for _ in range(20):
        fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        if gap_s:
            time.sleep(gap_s)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples) * 1e3, 3),
        "p99_ms": round(samples[max(0, int(len(samples) * 0.99) - 1)] * 1e3, 3),
        "n": n,
    }


def _fresh_process_faults() -> int:
    """Minor page faults of one warm-up in a fork of a verifier template (this process)."""
    import os
    import resource

    from awm_envs.verifiers import job as verifier_job

    verifier_job.sandbox_prepare_once()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        before_faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        verifier_job.sandbox_warmup()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before_faults
        os.write(w, str(faults).encode())
        os._exit(0)
    os.close(w)
    faults = int(os.read(r, 64) or b"0")
    os.close(r)
    os.waitpid(pid, 0)
    return faults


def main() -> None:
    before, after = images(2000)
    out: dict[str, object] = {"benchmark": "sandbox_overhead", "image_bytes": len(before)}
    with VerifierPool(size=1) as pool:
        t0 = time.perf_counter()
        pool.start()
        out["worker_start_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        assert pool.run(NATIVE, initial=before, final=after).complete is True
        assert pool.run(OFFICIAL, initial=before, final=after).complete is True
        out["native_signature"] = measure(
            lambda: pool.run(NATIVE, initial=before, final=after), 500
        )
        out["native_unsaturated"] = measure(
            lambda: pool.run(NATIVE, initial=before, final=after), 300, gap_s=0.01
        )
        out["official_paths_signature"] = measure(
            lambda: pool.run(OFFICIAL, initial=before, final=after), 300
        )
    out["fresh_process_page_faults"] = _fresh_process_faults()

    # The floor: the same verifier exec'd in-process with no containment (what upstream does).
    code = compile(NATIVE, "<v>", "exec")

    def in_process() -> None:
        ns: dict[str, object] = {}
        exec(code, ns)
        a, b = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
        a.deserialize(before)
        b.deserialize(after)
        ns["verify_count"](a, b, None)  # type: ignore[operator]

    out["in_process_exec_floor"] = measure(in_process, 500)
    # targets on the 2-core reference machine (issue 22): back to back, and trailing rollouts
    targets = {"native_signature": TARGET_BACK_TO_BACK_MS, "native_unsaturated": TARGET_TRAILING_MS}
    out["targets_ms"] = targets
    out["meets_targets"] = {
        name: out[name]["median_ms"] <= ms  # type: ignore[index]
        for name, ms in targets.items()
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
