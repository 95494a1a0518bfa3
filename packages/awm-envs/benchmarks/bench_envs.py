"""``nox -s perf``: our runtime against the official process-per-instance design, in one run.

Measures, on a generated back-office bundle (``benchenv.py`` beside this file):
instance create / reset / in-process call latency (median, p99), in-process
calls/s, calls/s over streamable-HTTP MCP with many concurrent sessions (one
instance each; the server in its own process, the load generator in
another, see :class:`RawMCPSession`, plus a shorter run driven by the
official ``mcp`` client), memory per instance with many live instances, a reset/call
leak check, and the official approach (one ``awm envs serve`` process per
instance, started together and waited on until MCP ``list_tools`` answers),
with the ratios between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchenv import write_bench_bundle
from rawmcp import LoadGeneratorError, RawMCPSession

from awm_envs.runtime.environment import Environment, load_environment

TARGETS = {
    "reset_median_us": ("<=", 100.0),
    "create_median_ms": ("<=", 2.0),
    "memory_1024_instances_gib": ("<=", 1.5),
    "inprocess_calls_per_s": (">=", 2000.0),
    "http_calls_per_s": (">=", 800.0),
    "create_speedup_vs_official": (">=", 100.0),
    "memory_ratio_vs_official": (">=", 20.0),
    "create_close_rss_growth_pct": ("<", 5.0),
}


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _summary(values: list[float], scale: float) -> dict[str, float]:
    return {
        "median": round(statistics.median(values) * scale, 3),
        "p99": round(_pct(values, 0.99) * scale, 3),
        "n": len(values),
    }


def _rss_bytes(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _pss_bytes(pid: int) -> int:
    """Proportional set size (shared pages split fairly), the honest per-process figure."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return _rss_bytes(pid)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure_create(env: Environment, n: int) -> dict[str, float]:
    times, keep = [], []
    for _ in range(n):
        t = time.perf_counter()
        keep.append(env.instance())
        times.append(time.perf_counter() - t)
    for inst in keep:
        inst.close_sync()
    return _summary(times, 1e3)  # ms


def measure_reset(env: Environment, n: int) -> dict[str, float]:
    inst = env.instance()
    times = []
    for k in range(n):
        if k % 10 == 0:  # dirty it now and then, as a rollout would
            inst.call_tool_sync(
                "set_order_status", {"order_id": 1 + k % 400, "status": "cancelled"}
            )
        t = time.perf_counter()
        inst.reset_sync()
        times.append(time.perf_counter() - t)
    inst.close_sync()
    return _summary(times, 1e6)  # µs


def measure_calls(env: Environment, n: int, instances: int = 16) -> dict[str, Any]:
    insts = [env.instance() for _ in range(instances)]
    rng = random.Random(1)
    for inst in insts:  # warm the statement caches
        inst.call_tool_sync("get_customer", {"customer_id": 1})
    times = []
    start, cpu_start = time.perf_counter(), time.process_time()
    for k in range(n):
        inst = insts[k % instances]
        t = time.perf_counter()
        result = inst.call_tool_sync("get_customer", {"customer_id": rng.randint(1, 400)})
        times.append(time.perf_counter() - t)
        assert not result.is_error, result.content
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    write_times = []
    for k in range(max(50, n // 10)):
        t = time.perf_counter()
        insts[k % instances].call_tool_sync(
            "create_ticket", {"customer_id": 1 + k % 400, "subject": "bench", "status": "open"}
        )
        write_times.append(time.perf_counter() - t)
    for inst in insts:
        inst.close_sync()
    return {
        "read_ms": _summary(times, 1e3),
        "write_ms": _summary(write_times, 1e3),
        "calls_per_s": round(n / elapsed, 1),
        # per CPU-second of this process: what one core delivers when not shared
        "calls_per_cpu_s": round(n / max(cpu, 1e-9), 1),
        "tool": "get_customer (primary-key read through the ORM)",
    }


def measure_memory(env: Environment, n: int) -> dict[str, Any]:
    gc.collect()
    before = _rss_bytes()
    insts = [env.instance() for _ in range(n)]
    for k, inst in enumerate(insts):  # every instance touched: a real rollout writes
        inst.call_tool_sync("set_order_status", {"order_id": 1 + k % 400, "status": "cancelled"})
    gc.collect()
    after = _rss_bytes()
    for inst in insts:
        inst.close_sync()
    per = (after - before) / n
    return {
        "instances": n,
        "total_mib": round((after - before) / 2**20, 1),
        "per_instance_kib": round(per / 1024, 1),
        "projected_1024_gib": round(per * 1024 / 2**30, 3),
        "template_kib": round(len(env.template) / 1024, 1),
    }


def measure_leak(env: Environment, cycles: int) -> dict[str, Any]:
    inst = env.instance()
    for _ in range(200):
        inst.call_tool_sync(
            "create_ticket", {"customer_id": 2, "subject": "warm", "status": "open"}
        )
        inst.reset_sync()
    gc.collect()
    before = _rss_bytes()
    for k in range(cycles):
        inst.call_tool_sync(
            "create_ticket", {"customer_id": 1 + k % 400, "subject": "leak", "status": "open"}
        )
        inst.call_tool_sync("get_customer", {"customer_id": 1 + k % 400})
        inst.reset_sync()
    gc.collect()
    growth = _rss_bytes() - before
    inst.close_sync()
    # instances are created and closed all the time in RL: none of them may leave anything behind
    for k in range(200):
        with env.instance() as warm:
            warm.call_tool_sync("get_customer", {"customer_id": 1 + k % 400})
    gc.collect()
    base = _rss_bytes()
    for k in range(cycles):
        with env.instance() as fresh:
            fresh.call_tool_sync("get_customer", {"customer_id": 1 + k % 400})
    gc.collect()
    cc_growth = _rss_bytes() - base
    return {
        "cycles": cycles,
        "rss_growth_kib": round(growth / 1024, 1),
        "create_close_cycles": cycles,
        "create_close_rss_growth_kib": round(cc_growth / 1024, 1),
        "create_close_rss_growth_pct": round(100 * cc_growth / base, 2),
    }


def _serve_cmd(bundle: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "awm_core.cli",
        "envs",
        "serve",
        str(bundle),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def _serve_env() -> dict[str, str]:
    # only this package's plugin: the measurement must not depend on (or pay for) others
    return {**os.environ, "AWM_LOAD_PLUGINS": "envs"}


async def _wait_ready(url: str, deadline: float) -> float:
    import mcp

    while True:
        try:
            async with mcp.Client(url) as client:
                await client.list_tools()
            return time.perf_counter()
        except Exception:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{url} did not answer list_tools in time") from None
            await asyncio.sleep(0.05)


async def _official_sessions(
    url: str, sessions: int, calls: int, tool: str
) -> tuple[float, float, int]:
    """Open ``sessions`` official-client sessions, then run ``calls`` each; (connect s, calls s, errors)."""
    import mcp

    errors = 0
    async with contextlib.AsyncExitStack() as stack:
        start = time.perf_counter()
        clients = [await stack.enter_async_context(mcp.Client(url)) for _ in range(sessions)]
        connected = time.perf_counter()

        async def one(idx: int, client: Any) -> None:
            nonlocal errors
            rng = random.Random(idx)
            for _ in range(calls):
                r = await client.call_tool(tool, {"customer_id": rng.randint(1, 400)})
                errors += bool(r.is_error)

        await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
        done = time.perf_counter()
    return connected - start, done - connected, errors


async def _raw_sessions(url: str, sessions: int, calls: int, tool: str) -> tuple[float, float, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    errors = 0
    start = time.perf_counter()
    clients = [await RawMCPSession(host, port, parts.path).open() for _ in range(sessions)]
    connected = time.perf_counter()

    async def one(idx: int, client: RawMCPSession) -> None:
        nonlocal errors
        rng = random.Random(idx)
        for _ in range(calls):
            r = await client.call_tool(tool, {"customer_id": rng.randint(1, 400)})
            errors += bool(r.is_error)

    try:
        await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
        done = time.perf_counter()
    finally:
        for c in clients:
            await c.close()
    return connected - start, done - connected, errors


def run_load(url: str, sessions: int, calls: int, client: str = "raw") -> dict[str, Any]:
    """Drive ``sessions`` concurrent MCP sessions against ``url``; calls/s once all are open."""
    runner = _raw_sessions if client == "raw" else _official_sessions
    cpu = time.process_time()
    connect_s, calls_s, errors = asyncio.run(runner(url, sessions, calls, "get_customer"))
    total = sessions * calls
    return {
        "client": client,
        "sessions": sessions,
        "calls": total,
        "errors": errors,
        "connect_s": round(connect_s, 3),
        "calls_per_s": round(total / calls_s, 1),
        "client_cpu_ms_per_call": round((time.process_time() - cpu) / total * 1e3, 3),
    }


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load_in_subprocess(url: str, sessions: int, calls: int, client: str) -> dict[str, Any]:
    """Run :func:`run_load` in its own process, so the load does not share the server's event loop."""
    out = subprocess.run(
        [sys.executable, __file__, "load", url, str(sessions), str(calls), client],
        env=_serve_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if out.returncode != 0:
        raise LoadGeneratorError(f"the load generator failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def _http_throughput(
    bundle: Path, sessions: int, calls_per_session: int, official_calls: int = 0
) -> dict[str, Any]:
    port = _free_port()
    proc = subprocess.Popen(
        _serve_cmd(bundle, port),
        env=_serve_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await _wait_ready(url, time.perf_counter() + 60)
        loop = asyncio.get_running_loop()
        cpu = _cpu_seconds(proc.pid)
        raw = await loop.run_in_executor(
            None, _load_in_subprocess, url, sessions, calls_per_session, "raw"
        )
        server_cpu = _cpu_seconds(proc.pid) - cpu
        report: dict[str, Any] = {
            "sessions": sessions,
            "instances": sessions,
            "calls": raw["calls"],
            "errors": raw["errors"],
            "calls_per_s": raw["calls_per_s"],
            # handshakes included: an upper bound on what one call costs the server
            "server_cpu_ms_per_call": round(server_cpu / raw["calls"] * 1e3, 3),
            "client_cpu_ms_per_call": raw["client_cpu_ms_per_call"],
            "load_generator": "RawMCPSession, one process, one connection per session",
        }
        if official_calls:
            off = await loop.run_in_executor(
                None, _load_in_subprocess, url, sessions, official_calls, "official"
            )
            report["official_client"] = {
                k: off[k] for k in ("calls", "errors", "calls_per_s", "client_cpu_ms_per_call")
            }
            report["errors"] += off["errors"]
        report["server_pss_mib"] = round(_pss_bytes(proc.pid) / 2**20, 1)
        return report
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _official(bundle: Path, n: int) -> dict[str, Any]:
    """One server process per instance, started together (what the official release does)."""
    ports = [_free_port() for _ in range(n)]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            _serve_cmd(bundle, p),
            env=_serve_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for p in ports
    ]
    try:
        ready = await asyncio.gather(
            *(_wait_ready(f"http://127.0.0.1:{p}/mcp", start + 300) for p in ports)
        )
        all_ready = time.perf_counter() - start
        pss = [_pss_bytes(p.pid) for p in procs]
        readiness = [r - start for r in ready]
        return {
            "instances": n,
            "all_ready_s": round(all_ready, 3),
            "ready_median_s": round(statistics.median(readiness), 3),
            "per_instance_create_ms": round(all_ready / n * 1e3, 1),
            "pss_per_instance_mib": round(statistics.median(pss) / 2**20, 1),
        }
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


def run_bench(
    *,
    quick: bool = False,
    official: bool = True,
    workdir: Path | None = None,
    http_only: bool = False,
) -> dict[str, Any]:
    """Run every measurement and return the report (see module docstring).

    ``http_only`` runs just the streamable-HTTP throughput part (a server
    process, the load generator in another), for iterating on the server.
    """
    sizes = (
        {
            "create": 100,
            "reset": 500,
            "calls": 500,
            "memory": 64,
            "leak": 300,
            "sessions": 8,
            "calls_per_session": 10,
            "official_client_calls": 5,
            "official": 2,
        }
        if quick
        else {
            "create": 1000,
            "reset": 5000,
            "calls": 5000,
            "memory": 1024,
            "leak": 20000,
            "sessions": 64,
            "calls_per_session": 80,
            "official_client_calls": 10,
            "official": 16,
        }
    )
    tmp = Path(workdir or tempfile.mkdtemp(prefix="awm-bench-"))
    bundle = write_bench_bundle(tmp)
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg()[0],
    }
    http = asyncio.run(
        _http_throughput(
            bundle, sizes["sessions"], sizes["calls_per_session"], sizes["official_client_calls"]
        )
    )
    if http_only:
        value = http["calls_per_s"]
        op, bound = TARGETS["http_calls_per_s"]
        return {
            "machine": machine,
            "quick": quick,
            "http": http,
            "targets": {
                "http_calls_per_s": {
                    "value": value,
                    "target": f"{op} {bound}",
                    "met": value >= bound,
                }
            },
        }
    t = time.perf_counter()
    env = load_environment(bundle)
    env.tools  # noqa: B018 - loading is lazy: this imports app.py and compiles the template
    load_s = time.perf_counter() - t
    inst = env.instance()
    rows = sum(
        inst.query_sync(f'SELECT COUNT(*) FROM "{name}"')[0][0] for name in env.bundle.tables
    )
    inst.close_sync()
    memory = measure_memory(env, sizes["memory"])  # first: later phases leave freed memory to reuse
    report: dict[str, Any] = {
        "machine": machine,
        "quick": quick,
        "bundle": {
            "tables": len(env.bundle.tables),
            "rows": rows,
            "tools": len(env.tools),
            "load_s": round(load_s, 3),
        },
        "create_ms": measure_create(env, sizes["create"]),
        "reset_us": measure_reset(env, sizes["reset"]),
        "inprocess": measure_calls(env, sizes["calls"]),
        "memory": memory,
        "leak": measure_leak(env, sizes["leak"]),
    }
    report["http"] = http
    if official:
        off = asyncio.run(_official(bundle, sizes["official"]))
        report["official"] = off
        ours_create_ms = report["create_ms"]["median"]
        report["ratios"] = {
            "create_speedup_vs_official": round(off["ready_median_s"] * 1e3 / ours_create_ms, 1),
            "create_speedup_vs_official_amortised": round(
                off["per_instance_create_ms"] / ours_create_ms, 1
            ),
            "memory_ratio_vs_official": round(
                off["pss_per_instance_mib"]
                * 1024
                / max(report["memory"]["per_instance_kib"], 1e-3),
                1,
            ),
            "reset_speedup_vs_restart": round(
                off["ready_median_s"] * 1e6 / report["reset_us"]["median"], 1
            ),
        }
    flat = {
        "reset_median_us": report["reset_us"]["median"],
        "create_median_ms": report["create_ms"]["median"],
        "memory_1024_instances_gib": report["memory"]["projected_1024_gib"],
        "inprocess_calls_per_s": report["inprocess"]["calls_per_s"],
        "http_calls_per_s": report["http"]["calls_per_s"],
        "create_close_rss_growth_pct": report["leak"]["create_close_rss_growth_pct"],
        **{k: v for k, v in report.get("ratios", {}).items() if k in TARGETS},
    }
    report["targets"] = {
        k: {
            "value": flat[k],
            "target": f"{op} {bound}",
            "met": {"<=": flat[k] <= bound, "<": flat[k] < bound, ">=": flat[k] >= bound}[op],
        }
        for k, (op, bound) in TARGETS.items()
        if k in flat
    }
    return report


def _http_line(http: dict[str, Any]) -> str:
    line = (
        f"http     {http['calls_per_s']} calls/s with {http['sessions']} MCP sessions "
        f"(server {http['server_cpu_ms_per_call']} ms CPU/call, load generator "
        f"{http['client_cpu_ms_per_call']} ms in its own process)"
    )
    if "official_client" in http:
        o = http["official_client"]
        line += (
            f"\n         {o['calls_per_s']} calls/s driven by the official mcp client "
            f"({o['client_cpu_ms_per_call']} ms client CPU/call)"
        )
    return line


def format_report(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_bench`'s report."""
    if "bundle" not in report:  # http_only
        return "\n".join(
            [
                _http_line(report["http"]),
                "targets  "
                + ", ".join(
                    f"{k} {'ok' if v['met'] else 'MISSED'}" for k, v in report["targets"].items()
                ),
            ]
        )
    b = report["bundle"]
    lines = [
        f"bench bundle: {b['tables']} tables, {b['rows']} rows, {b['tools']} tools (loaded in {b['load_s']} s)",
        f"create   median {report['create_ms']['median']} ms   p99 {report['create_ms']['p99']} ms",
        f"reset    median {report['reset_us']['median']} µs   p99 {report['reset_us']['p99']} µs",
        f"call     median {report['inprocess']['read_ms']['median']} ms   p99 {report['inprocess']['read_ms']['p99']} ms   "
        f"{report['inprocess']['calls_per_s']} calls/s in-process",
        f"memory   {report['memory']['per_instance_kib']} KiB/instance ({report['memory']['instances']} live), "
        f"1,024 instances ≈ {report['memory']['projected_1024_gib']} GiB",
        _http_line(report["http"]),
        f"leak     {report['leak']['rss_growth_kib']} KiB RSS growth over {report['leak']['cycles']} call+reset cycles; "
        f"{report['leak']['create_close_rss_growth_pct']}% over {report['leak']['create_close_cycles']} create+call+close cycles",
    ]
    if "official" in report:
        o, r = report["official"], report["ratios"]
        lines += [
            f"official {o['instances']} processes ready in {o['all_ready_s']} s (median {o['ready_median_s']} s), "
            f"{o['pss_per_instance_mib']} MiB PSS each",
            f"ratios   create x{r['create_speedup_vs_official']}, memory x{r['memory_ratio_vs_official']}, "
            f"reset vs restart x{r['reset_speedup_vs_restart']}",
        ]
    lines.append(
        "targets  "
        + ", ".join(f"{k} {'ok' if v['met'] else 'MISSED'}" for k, v in report["targets"].items())
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``bench_envs.py [--quick] [--json] [--no-official] [--http-only]``, or ``load URL SESSIONS CALLS [raw|official]``."""
    import argparse

    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["load"]:  # the load generator, run in its own process by _load_in_subprocess
        if len(args) < 4:
            sys.exit("usage: bench_envs.py load URL SESSIONS CALLS [raw|official]")
        client_kind = args[4] if len(args) > 4 else "raw"
        print(json.dumps(run_load(args[1], int(args[2]), int(args[3]), client_kind)))
        return
    parser = argparse.ArgumentParser(
        prog="bench_envs.py",
        description="Measure create/reset/call latency, throughput and memory against process-per-instance.",
    )
    parser.add_argument("--json", action="store_true", help="Print the full report as JSON.")
    parser.add_argument(
        "--quick", action="store_true", help="Small sizes (seconds): for smoke checks."
    )
    parser.add_argument(
        "--no-official", action="store_true", help="Skip the one-process-per-instance baseline."
    )
    parser.add_argument(
        "--http-only", action="store_true", help="Only the streamable-HTTP MCP throughput part."
    )
    ns = parser.parse_args(args)
    report = run_bench(quick=ns.quick, official=not ns.no_official, http_only=ns.http_only)
    print(json.dumps(report, indent=2) if ns.json else format_report(report))


if __name__ == "__main__":
    main()
