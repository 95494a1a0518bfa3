"""The verifier sandbox: every signature runs, every hostile verifier is contained.

Each hostile test is followed (in the same test) by a good verification on the
same pool, proving the pool keeps serving after the failure.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from awm_core.models.verification import VerifierErrorKind, VerifierResult
from awm_envs.verifiers.pool import VERIFIER_LIMITS, VerifierPool

NATIVE = """
def verify_cancel(initial, final, final_answer):
    before = initial.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    after = final.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    others = final.execute("SELECT count(*) FROM orders WHERE id != 2 AND status = 'cancelled'").fetchone()[0]
    return {"complete": after == "cancelled" and others == 0,
            "evidence": {"before": before, "after": after, "answer": final_answer}}
"""

OFFICIAL_EVIDENCE = """
import sqlite3
def verify_task(initial_db_path, final_db_path):
    conn = sqlite3.connect(final_db_path)
    status = conn.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    conn.close()
    return {"order_2_status": status, "changed_records": 1}
"""

OFFICIAL_COMPLETION = """
import sqlite3
def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    conn = sqlite3.connect(final_db_path)
    status = conn.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    return {"result": "complete" if status == "cancelled" else "others"}
"""


def run(pool: VerifierPool, images: tuple[bytes, bytes], body: str, **kw: object) -> VerifierResult:
    return pool.run(body, initial=images[0], final=images[1], **kw)  # type: ignore[arg-type]


def still_serves(pool: VerifierPool, images: tuple[bytes, bytes]) -> None:
    result = run(pool, images, NATIVE, final_answer="done")
    assert result.ok, result.error
    assert result.complete is True


def hostile(body: str) -> str:
    return "def verify_bad(initial, final, final_answer):\n" + "\n".join(
        "    " + line for line in body.strip().splitlines()
    )


# --------------------------------------------------------------------------- signatures


def test_native_verifier_gets_readonly_connections_and_the_final_answer(pool, orders_images):
    result = run(pool, orders_images, NATIVE, final_answer="Order 2 is cancelled.")
    assert result.ok and result.complete is True
    assert result.signature == "native"
    assert result.evidence == {
        "before": "pending",
        "after": "cancelled",
        "answer": "Order 2 is cancelled.",
    }


def test_native_verifier_rejects_an_unchanged_database(pool, orders_images):
    result = run(pool, (orders_images[0], orders_images[0]), NATIVE)
    assert result.ok and result.complete is False


def test_official_verify_task_returns_evidence_without_a_verdict(pool, orders_images):
    result = run(pool, orders_images, OFFICIAL_EVIDENCE)
    assert result.ok, result.error
    assert result.signature == "verify_task"
    assert result.complete is None
    assert result.evidence == {"order_2_status": "cancelled", "changed_records": 1}


def test_official_verify_task_completion_maps_result_to_complete(pool, orders_images):
    done = run(pool, orders_images, OFFICIAL_COMPLETION)
    assert done.ok and done.signature == "verify_task_completion" and done.complete is True
    not_done = run(pool, (orders_images[0], orders_images[0]), OFFICIAL_COMPLETION)
    assert not_done.ok and not_done.complete is False


def test_official_verifiers_receive_paths_to_private_copies_that_are_removed_afterwards(
    pool, orders_images
):
    body = """
import os
def verify_task(initial_db_path, final_db_path):
    return {"paths": [initial_db_path, final_db_path], "exists": os.path.exists(final_db_path)}
"""
    result = run(pool, orders_images, body)
    assert result.ok, result.error
    assert result.evidence["exists"] is True
    assert not any(Path(p).exists() for p in result.evidence["paths"])


def test_signature_is_detected_by_parameter_names_when_the_name_is_custom(pool, orders_images):
    body = OFFICIAL_COMPLETION.replace("def verify_task_completion", "def check_cancel")
    result = run(pool, orders_images, body, function="check_cancel")
    assert result.signature == "verify_task_completion" and result.complete is True


def test_a_missing_function_is_an_invalid_verifier(pool, orders_images):
    result = run(pool, orders_images, NATIVE, function="verify_nothing")
    assert result.error is not None and result.error.kind == VerifierErrorKind.INVALID
    assert "verify_nothing" in result.error.message


def test_a_syntax_error_is_an_invalid_verifier(pool, orders_images):
    result = run(
        pool,
        orders_images,
        "def verify_x(initial, final, final_answer):\n  return {",
        function="verify_x",
    )
    assert result.error is not None and result.error.kind == VerifierErrorKind.INVALID


def test_verifier_output_is_captured_and_json_types_are_converted(pool, orders_images):
    body = """
import datetime, decimal
def verify_x(initial, final, final_answer):
    print("checking")
    return {"complete": True, "evidence": {"when": datetime.date(2025, 1, 2),
            "amount": decimal.Decimal("1.5"), "ids": {3, 1}}}
"""
    result = run(pool, orders_images, body)
    assert result.ok, result.error
    assert result.evidence == {"when": "2025-01-02", "amount": 1.5, "ids": [1, 3]}
    assert result.stdout == "checking\n"


# --------------------------------------------------------------------------- hostile verifiers


def test_infinite_loop_times_out_and_the_pool_keeps_serving(pool, orders_images):
    result = run(pool, orders_images, hostile("while True:\n    pass"))
    assert result.error is not None and result.error.kind == VerifierErrorKind.TIMEOUT
    still_serves(pool, orders_images)


def test_loop_that_swallows_every_exception_is_killed_by_the_wall_clock(orders_images):
    limits = VERIFIER_LIMITS.with_(cpu_s=0.3, wall_s=1.0)
    with VerifierPool(size=1, limits=limits) as p:
        body = hostile(
            "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
        )
        result = run(p, orders_images, body)
        assert result.error is not None and result.error.kind == VerifierErrorKind.TIMEOUT
        still_serves(p, orders_images)


def test_slow_verifier_under_a_generous_cpu_budget_hits_the_wall_clock(orders_images):
    with VerifierPool(size=1, limits=VERIFIER_LIMITS.with_(cpu_s=30, wall_s=0.5)) as p:
        result = run(
            p, orders_images, hostile("import datetime\nwhile True:\n    datetime.datetime.now()")
        )
        assert result.error is not None and result.error.kind == VerifierErrorKind.TIMEOUT
        assert "wall-clock" in result.error.message
        still_serves(p, orders_images)


def test_runaway_sql_query_is_interrupted(pool, orders_images):
    body = hostile(
        "return final.execute('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
        "SELECT count(*) FROM c').fetchone()"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.TIMEOUT
    still_serves(pool, orders_images)


def test_memory_bomb_is_a_memory_error(pool, orders_images):
    result = run(
        pool, orders_images, hostile("x = 'a' * (4 * 1024 ** 3)\nreturn {'complete': True}")
    )
    assert result.error is not None and result.error.kind == VerifierErrorKind.MEMORY
    still_serves(pool, orders_images)


def test_growing_memory_bomb_is_a_memory_error(orders_images):
    # A generous CPU budget: touching fresh pages is system time, slow on a busy machine.
    limits = VERIFIER_LIMITS.with_(cpu_s=20, wall_s=30, memory_bytes=128 * 1024 * 1024)
    with VerifierPool(size=1, limits=limits) as p:
        body = hostile("chunks = []\nwhile True:\n    chunks.append(bytearray(8 * 1024 * 1024))")
        result = run(p, orders_images, body)
        assert result.error is not None and result.error.kind == VerifierErrorKind.MEMORY
        still_serves(p, orders_images)


def test_os_system_is_forbidden(pool, orders_images, tmp_path):
    marker = tmp_path / "pwned"
    body = hostile(
        "import collections\nos = collections._sys.modules['os']\n"
        f"os.system('touch {marker}')\nreturn {{'complete': True}}"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    assert "os.system" in result.error.message
    assert not marker.exists()
    still_serves(pool, orders_images)


def test_subprocess_is_forbidden_even_when_reached_around_the_import_allowlist(pool, orders_images):
    body = hostile(
        "import collections\nsys = collections._sys\n"
        "sp = sys.modules.get('subprocess') or sys.modules['importlib'].import_module('subprocess')\n"
        "sp.run(['true'])\nreturn {'complete': True}"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    still_serves(pool, orders_images)


def test_socket_connect_is_forbidden(pool, orders_images):
    body = hostile(
        "import collections\nimportlib = collections._sys.modules['importlib']\n"
        "socket = importlib.import_module('socket')\n"
        "s = socket.socket()\ns.connect(('127.0.0.1', 9))\nreturn {'complete': True}"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    still_serves(pool, orders_images)


def test_forbidden_operation_is_reported_even_if_the_verifier_catches_the_error(
    pool, orders_images
):
    body = hostile(
        "import collections\ntry:\n    collections._sys.modules['os'].system('true')\n"
        "except Exception:\n    pass\nreturn {'complete': True}"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN


def test_writing_the_database_is_forbidden_and_changes_nothing(pool, orders_images):
    body = hostile(
        "final.execute(\"UPDATE orders SET status = 'x'\")\nfinal.commit()\nreturn {'complete': True}"
    )
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    still_serves(pool, orders_images)


def test_turning_query_only_off_is_forbidden(pool, orders_images):
    result = run(
        pool,
        orders_images,
        hostile("final.execute('PRAGMA query_only = OFF')\nreturn {'complete': True}"),
    )
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN


def test_official_verifier_cannot_write_its_database_copy(pool, orders_images):
    body = """
import sqlite3
def verify_task(initial_db_path, final_db_path):
    conn = sqlite3.connect(final_db_path)
    conn.execute("DELETE FROM orders")
    conn.commit()
    return {}
"""
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN


def test_opening_a_file_for_writing_is_forbidden(pool, orders_images, tmp_path):
    target = tmp_path / "out.txt"
    result = run(
        pool,
        orders_images,
        hostile(f"open({str(target)!r}, 'w').write('x')\nreturn {{'complete': True}}"),
    )
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    assert not target.exists()


def test_reading_another_instances_database_is_forbidden(pool, orders_images, tmp_path):
    other = tmp_path / "other_instance.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE secrets (x)")
    conn.commit()
    conn.close()
    for body in (
        hostile(
            f"return {{'complete': True, 'evidence': {{'x': open({str(other)!r}, 'rb').read(16).hex()}}}}"
        ),
        hostile(
            f"import sqlite3\nsqlite3.connect({str(other)!r}).execute('select 1')\nreturn {{'complete': True}}"
        ),
        hostile(f"final.execute(\"ATTACH DATABASE '{other}' AS o\")\nreturn {{'complete': True}}"),
        hostile(
            "import sqlite3\nc = sqlite3.connect(':memory:')\n"
            f"c.execute(\"ATTACH DATABASE '{other}' AS o\")\nreturn {{'complete': True}}"
        ),
        hostile(f"import sqlite3\nsqlite3.Connection({str(other)!r})\nreturn {{'complete': True}}"),
    ):
        result = run(pool, orders_images, body)
        assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN, body
    still_serves(pool, orders_images)


def test_importing_a_module_outside_the_allowlist_is_forbidden(pool, orders_images):
    result = run(pool, orders_images, hostile("import subprocess\nreturn {'complete': True}"))
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    assert "allowed" in result.error.message
    still_serves(pool, orders_images)


def test_api_keys_in_the_host_environment_are_not_visible(pool, orders_images, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    body = hostile(
        "import collections\nenv = dict(collections._sys.modules['os'].environ)\n"
        "return {'complete': 'OPENAI_API_KEY' not in env}"
    )
    result = run(pool, orders_images, body)
    assert result.ok and result.complete is True


@pytest.mark.parametrize(
    ("ret", "needle"),
    [
        ("[1, 2]", "list"),
        ("{'complete': 'yes'}", "complete"),
        ("{'complete': True, 'evidence': [1]}", "evidence"),
        ("object()", "JSON"),
        ("{'complete': True, 'evidence': {'x': float('nan')}}", "JSON"),
    ],
)
def test_garbage_output_is_bad_output(pool, orders_images, ret, needle):
    result = run(pool, orders_images, hostile(f"return {ret}"))
    assert result.error is not None and result.error.kind == VerifierErrorKind.BAD_OUTPUT
    assert needle in result.error.message


def test_bad_official_result_value_is_bad_output(pool, orders_images):
    body = "def verify_task_completion(initial_db_path, final_db_path, final_answer=None):\n    return {'result': 'maybe'}"
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.BAD_OUTPUT


def test_raising_verifier_is_an_exception_with_the_verifiers_traceback(pool, orders_images):
    result = run(pool, orders_images, hostile("return {'complete': 1 / 0}"))
    assert result.error is not None and result.error.kind == VerifierErrorKind.EXCEPTION
    assert "ZeroDivisionError" in result.error.message
    assert "1 / 0" in (result.error.traceback or "")
    assert "verifiers/job.py" not in (result.error.traceback or "").split("verify_bad")[-1]


def test_a_worker_killed_from_outside_is_replaced_on_the_next_job(orders_images):
    with VerifierPool(size=1) as p:
        still_serves(p, orders_images)
        (template,) = p._jobs._servers
        os.kill(template.proc.pid, 9)
        template.proc.proc.wait()
        still_serves(p, orders_images)


def test_pool_is_safe_to_use_from_many_threads(pool, orders_images):
    """24 different jobs on 6 threads: each gets its own verdict and evidence, as serially."""
    from concurrent.futures import ThreadPoolExecutor

    from awm_core.plugins import load_plugins

    load_plugins()  # the registry's own first-use race is tests/test_concurrency.py's
    unchanged = (orders_images[0], orders_images[0])
    jobs = [(orders_images if k % 3 else unchanged, NATIVE, f"answer {k}") for k in range(24)]

    def job(j: tuple[tuple[bytes, bytes], str, str]) -> tuple[object, ...]:
        r = run(pool, j[0], j[1], final_answer=j[2])
        return (r.ok, r.complete, r.evidence)

    with ThreadPoolExecutor(6) as ex:
        concurrent = list(ex.map(job, jobs))
    serial = [job(j) for j in jobs]
    assert {c for _, c, _ in serial} == {True, False}
    assert concurrent == serial
    assert [e["answer"] for _, _, e in concurrent] == [f"answer {k}" for k in range(24)]


# --------------------------------------------------------------------------- real generated code

AWM1K_STYLE = """
import sqlite3
import time
import random
from datetime import datetime
from zoneinfo import ZoneInfo

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    started = time.time()
    conn = sqlite3.connect(final_db_path)
    status = conn.execute("SELECT status FROM orders WHERE id = 2").fetchone()[0]
    conn.close()
    stamp = datetime(2025, 3, 14, 12, tzinfo=ZoneInfo("America/New_York"))
    random.seed(0)
    ok = status == "cancelled" and stamp.utcoffset().total_seconds() == -4 * 3600
    return {"result": "complete" if ok and time.time() >= started else "others"}
"""


def test_official_pipeline_verifiers_may_use_time_zoneinfo_and_random(pool, orders_images):
    """The AWM-1K release's verifiers import time and zoneinfo: pure, and now allowed."""
    done = run(pool, orders_images, AWM1K_STYLE)
    assert done.ok, done.error
    assert done.signature == "verify_task_completion" and done.complete is True
    not_done = run(pool, (orders_images[0], orders_images[0]), AWM1K_STYLE)
    assert not_done.ok and not_done.complete is False


@pytest.mark.parametrize(
    ("module", "because"),
    [
        ("subprocess", "cannot start processes"),
        ("socket", "have no network"),
        ("shutil", "read only the two databases"),
        ("ctypes", "interpreter's internals"),
    ],
)
def test_process_network_and_file_modules_are_refused_saying_why(
    pool, orders_images, module: str, because: str
):
    body = f"import {module}\n" + NATIVE
    result = run(pool, orders_images, body)
    assert result.error is not None and result.error.kind == VerifierErrorKind.FORBIDDEN
    assert f"import of {module!r} is not allowed" in result.error.message
    assert because in result.error.message
    still_serves(pool, orders_images)
