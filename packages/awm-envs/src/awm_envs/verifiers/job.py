"""Run verifier code in a fresh fork of a sandbox template per job, under the verifier policy.

The job of :class:`~awm_envs.sandbox.forkserver.ForkServer` templates that
verify (:class:`~awm_envs.verifiers.pool.VerifierPool`).
The template imports this module and calls :func:`sandbox_prepare` once; each
verification then runs :func:`run` in a child forked for it alone, so nothing a
verifier changes (a rebound builtin, a patched ``json.dumps``) reaches the next.

The OS layer (bubblewrap: no network, no host files, private PID namespace;
rlimits) is the boundary. The Python-level policy is defence in depth and, above
all, the source of precise errors; it is :mod:`awm_envs.verifiers.policy`
(a CPU budget, an import allowlist, an audit-hook policy, read-only SQLite),
and this module runs each verification under it.

A request header carries ``source``, ``function``, ``style`` ("connections":
two database images as blobs; "paths": two read-only files), ``paths``,
``pass_final_answer``, ``final_answer``, ``cpu_limit_s`` and
``max_output_bytes``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import sqlite3
import sys
import time
import traceback
import types
from typing import Any

from awm_envs.verifiers.policy import (
    ALLOWED_IMPORTS,
    PROXIES,
    SAFE_BUILTINS,
    STATE,
    CpuLimitExceeded,
    ForbiddenImportError,
    audit_hook,
    harden,
    on_cpu_signal,
)

# --------------------------------------------------------------------------- job execution


def _jsonable(obj: Any) -> Any:
    import datetime
    import decimal

    if isinstance(obj, datetime.datetime | datetime.date | datetime.time):
        return obj.isoformat()
    if isinstance(obj, decimal.Decimal):
        return float(obj)
    if isinstance(obj, set | frozenset):
        try:
            return sorted(obj)
        except TypeError:
            return list(obj)
    if isinstance(obj, bytes):
        return "x'" + obj.hex() + "'"
    raise TypeError(f"a value of type {type(obj).__name__} is not JSON-serialisable")


_code_cache: dict[str, types.CodeType] = {}


def _compile(source: str, label: str) -> types.CodeType:
    key = hashlib.sha256(source.encode()).hexdigest()
    code = _code_cache.get(key)
    if code is None:
        import linecache

        filename = f"<verifier {label} {key[:8]}>"
        code = compile(source, filename, "exec")
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if len(_code_cache) > 256:
            _code_cache.clear()
        _code_cache[key] = code
    return code


def _verifier_traceback(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # hide the worker's own frames: only the verifier's lines help
    lines = traceback.format_exception(type(exc), exc, tb)
    return "".join(lines)[-4000:]


def _error(kind: str, message: str, tb: str | None = None) -> dict[str, Any]:
    return {"status": "error", "kind": kind, "message": message, "traceback": tb}


def _classify(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, CpuLimitExceeded):
        return _error("timeout", "the verifier exceeded its CPU time limit")
    if isinstance(exc, MemoryError) or "out of memory" in str(exc).lower():
        return _error("memory", "the verifier exceeded its memory limit", _verifier_traceback(exc))
    if STATE.cpu_exceeded:  # a runaway query interrupted by the progress handler
        return _error("timeout", "the verifier exceeded its CPU time limit")
    if STATE.violations:
        return _error("forbidden", STATE.violations[0], _verifier_traceback(exc))
    if isinstance(exc, ForbiddenImportError):
        return _error("forbidden", str(exc), _verifier_traceback(exc))
    return _error("exception", f"{type(exc).__name__}: {exc}", _verifier_traceback(exc))


def _arguments(
    job: dict[str, Any], blobs: list[bytes], conns: list[sqlite3.Connection]
) -> list[Any]:
    """The verifier's arguments: two hardened connections (or two paths), and the final answer."""
    args: list[Any]
    if job["style"] == "connections":
        for image in blobs:
            conn = sqlite3.connect(":memory:")
            if image:
                conn.deserialize(image)
            conns.append(harden(conn))
        args = list(conns)
    else:
        args = list(job["paths"])
    if job.get("pass_final_answer"):
        args.append(job.get("final_answer"))
    return args


def _call(
    code: types.CodeType, function: str, args: list[Any], cpu_limit: float
) -> tuple[dict[str, Any], Any]:
    """Run the verifier source and call ``function`` under the CPU timer and the audit policy.

    Returns the reply (``ok`` or the classified failure) and what the function returned.
    """
    namespace: dict[str, Any] = {"__builtins__": SAFE_BUILTINS, "__name__": "verifiers"}
    raw: Any = None
    reply: dict[str, Any]
    try:
        signal.setitimer(signal.ITIMER_PROF, cpu_limit)
        STATE.active = True
        try:
            exec(code, namespace)
            fn = namespace.get(function)
            if not callable(fn):
                STATE.active = False
                reply = _error(
                    "invalid",
                    f"the verifier source defines no function {function!r}",
                )
            else:
                raw = fn(*args)
                reply = {"status": "ok"}
        finally:
            STATE.active = False
            signal.setitimer(signal.ITIMER_PROF, 0)
    except BaseException as exc:  # the verifier's failure, whatever it is, becomes a reply
        STATE.active = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        reply = _classify(exc)
    return reply, raw


def _checked_output(reply: dict[str, Any], raw: Any, config: dict[str, Any]) -> dict[str, Any]:
    """An ``ok`` reply with the result as JSON, unless the run broke a rule or the result does."""
    if STATE.cpu_exceeded:
        return _error("timeout", "the verifier exceeded its CPU time limit")
    if STATE.violations:
        return _error("forbidden", STATE.violations[0])
    try:
        text = json.dumps(raw, default=_jsonable, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return _error(
            "bad_output",
            f"the verifier returned a {type(raw).__name__} that is not JSON: {exc}",
        )
    limit = config.get("max_output_bytes", 262144)
    if len(text) > int(limit):
        return _error(
            "bad_output",
            f"the verifier's output is {len(text)} bytes; the limit is {limit}",
        )
    reply["result_json"] = text
    return reply


def run_job(job: dict[str, Any], blobs: list[bytes], config: dict[str, Any]) -> dict[str, Any]:
    """Run one verification; always returns a reply dict, never raises."""
    STATE.violations = []
    STATE.cpu_exceeded = False
    STATE.allowed_files = frozenset(os.path.abspath(p) for p in job.get("paths", []))
    cpu_limit = float(job.get("cpu_limit_s", 5.0))
    stdout = io.StringIO()
    conns: list[sqlite3.Connection] = []
    try:
        code = _compile(job["source"], job["function"])
    except (SyntaxError, ValueError) as exc:
        return _error("invalid", f"the verifier source does not compile: {exc}")

    STATE.cpu_deadline = time.process_time() + cpu_limit
    args = _arguments(job, blobs, conns)
    saved_stdout = sys.stdout
    started = time.perf_counter()
    try:
        sys.stdout = stdout
        reply, raw = _call(code, job["function"], args, cpu_limit)
    finally:
        sys.stdout = saved_stdout
        for c in conns:
            c.close()
    elapsed = time.perf_counter() - started

    if reply["status"] == "ok":
        reply = _checked_output(reply, raw, config)
    reply["stdout"] = stdout.getvalue()[-2000:]
    reply["elapsed_s"] = elapsed
    return reply


# --------------------------------------------------------------------------- template hooks


def _warm_up() -> None:
    """Import every allowed module and trigger their lazy imports before the policy starts."""
    import datetime

    for name in ALLOWED_IMPORTS - set(PROXIES):
        __import__(name)
    datetime.datetime.strptime("2024-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
    datetime.datetime.fromisoformat("2024-01-02T03:04:05")
    import re
    import statistics

    re.compile(r"\d+").findall("a1b22")
    statistics.median([1, 2, 3])
    statistics.mean([1.0, 2.0])
    import time
    import zoneinfo

    time.strftime("%Y", time.gmtime(0))
    with contextlib.suppress(Exception):
        zoneinfo.ZoneInfo("UTC")
    "x".encode("idna")
    f"{1.5}"


def sandbox_prepare() -> None:
    """Once, in the template: warm every allowed module, then install the (idle) audit policy."""
    global _prepared
    _prepared = True
    _warm_up()
    signal.signal(signal.SIGPROF, on_cpu_signal)
    signal.signal(signal.SIGXCPU, on_cpu_signal)
    sys.addaudithook(audit_hook)


_WARMUP_SOURCE = """
def verify_warmup(initial, final, final_answer):
    rows = final.execute("SELECT n FROM t").fetchall()
    return {"complete": len(rows) == 1, "evidence": {"rows": [list(r) for r in rows]}}
"""


def _warmup_image() -> bytes:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")
    image = conn.serialize()
    conn.close()
    return image


_WARMUP_IMAGE = _warmup_image()


def sandbox_warmup() -> None:
    """In each fresh child, before its job arrives: one known verification, so the pages a
    verification touches are already the child's own when the real one runs."""
    header = {
        "source": _WARMUP_SOURCE,
        "function": "verify_warmup",
        "style": "connections",
        "paths": [],
        "pass_final_answer": True,
        "final_answer": None,
        "cpu_limit_s": 5.0,
    }
    run_job(header, [_WARMUP_IMAGE, _WARMUP_IMAGE], header)


_prepared = False


def sandbox_prepare_once() -> None:
    """:func:`sandbox_prepare` for a process that is not a template (audit hooks stack up)."""
    global _prepared
    if not _prepared:
        _prepared = True
        sandbox_prepare()


def run(header: dict[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    """One verification, in a fork of its own (see :mod:`awm_envs.sandbox.forkhost`)."""
    try:
        return run_job(header, blobs, header)
    except MemoryError:
        return _error("memory", "the verifier exceeded its memory limit")
