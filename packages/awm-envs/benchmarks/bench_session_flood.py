"""Session flood against ``awm envs serve``: issue #11, finding 6.

Starts ``awm envs serve ENV --port P`` in a subprocess, sends ``--requests``
(default 10,050) MCP ``initialize`` requests from one loopback client (a few
keep-alive connections, no ``notifications/initialized``, no DELETE: sessions
that are opened and forgotten), then measures:

* whether a brand-new client (the official ``mcp`` client) still gets in:
  initialize, ``tools/list`` and one ``tools/call``;
* the server's RSS before and after the flood;
* the time from SIGTERM (``--signal INT``: SIGINT) to the server's exit, and
  whether the shutdown finished or hit the deadline of ``awm envs serve``;
* how many lines the server wrote to stderr (log/traceback volume).

Run it with ``uv run python packages/awm-envs/benchmarks/bench_session_flood.py``
(``--json`` for a machine-readable report; extra server flags after ``--``,
e.g. ``-- --max-sessions 1000``). It is a measurement, not a test: it prints
figures and exits 0 unless the harness itself fails.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    import mcp

    deadline = time.perf_counter() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before answering")
        try:
            async with mcp.Client(url) as client:
                await client.list_tools()
            return
        except Exception:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{url} did not answer in {timeout} s") from None
            await asyncio.sleep(0.1)


async def _flood_connection(
    port: int, count: int, statuses: collections.Counter[int], errors: list[str]
) -> None:
    """``count`` initialize requests over one keep-alive connection, each answer read fully."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1],
                "capabilities": {},
                "clientInfo": {"name": "flood", "version": "0"},
            },
        }
    ).encode()
    request = (
        b"POST /mcp HTTP/1.1\r\n"
        + f"host: 127.0.0.1:{port}\r\n".encode()
        + b"accept: application/json, text/event-stream\r\n"
        + b"content-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    reader = writer = None
    sent = 0
    while sent < count:
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert reader is not None
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:] if line)
            }
            await reader.readexactly(int(headers.get("content-length", "0")))
            statuses[status] += 1
            sent += 1
            if headers.get("connection", "").lower() == "close":
                writer.close()
                writer = None
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            sent += 1
            if writer is not None:
                writer.close()
                writer = None
            if len(errors) > 100:
                return
    if writer is not None:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _new_client(url: str, timeout: float) -> dict[str, Any]:
    """Can a brand-new official client initialize, list tools and call one?"""
    import mcp

    out: dict[str, Any] = {"initialized": False, "tools": 0, "call": None, "error": None}
    start = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            async with mcp.Client(url) as client:
                out["initialized"] = True
                tools = (await client.list_tools()).tools
                out["tools"] = len(tools)
                tool = next(
                    (t for t in tools if not (t.input_schema or {}).get("required")), tools[0]
                )
                result = await client.call_tool(tool.name, {})
                out["call"] = f"{tool.name}: {'error result' if result.is_error else 'ok'}"
    except BaseException as exc:  # noqa: BLE001 - report whatever stopped the client
        if isinstance(exc, KeyboardInterrupt):
            raise
        text = repr(exc)
        if isinstance(exc, BaseExceptionGroup):
            text = "; ".join(repr(e) for e in exc.exceptions)
        out["error"] = text[:500]
    out["seconds"] = round(time.perf_counter() - start, 3)
    out["got_in"] = out["initialized"] and out["call"] is not None
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    cmd = [
        sys.executable,
        "-m",
        "awm_core.cli",
        "envs",
        "serve",
        args.env,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *args.server_args,
    ]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            cmd,
            env={**os.environ, "AWM_LOAD_PLUGINS": "envs"},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        report: dict[str, Any] = {
            "env": args.env,
            "server_args": args.server_args,
            "requests": args.requests,
            "connections": args.connections,
            "signal": f"SIG{args.signal}",
        }
        try:
            await _wait_ready(url, proc, 60)
            report["rss_before_mib"] = round(_rss_mib(proc.pid), 1)
            statuses: collections.Counter[int] = collections.Counter()
            errors: list[str] = []
            per = [args.requests // args.connections] * args.connections
            per[0] += args.requests - sum(per)
            start = time.perf_counter()
            await asyncio.gather(*(_flood_connection(port, n, statuses, errors) for n in per))
            flood_s = time.perf_counter() - start
            report["flood_s"] = round(flood_s, 2)
            report["flood_requests_per_s"] = round(args.requests / flood_s, 1)
            report["flood_statuses"] = {str(k): v for k, v in sorted(statuses.items())}
            report["flood_errors"] = len(errors)
            if errors:
                report["flood_first_error"] = errors[0]
            report["rss_after_flood_mib"] = round(_rss_mib(proc.pid), 1)
            report["rss_growth_mib"] = round(
                report["rss_after_flood_mib"] - report["rss_before_mib"], 1
            )
            report["new_client"] = await _new_client(url, args.client_timeout)
            report["rss_after_new_client_mib"] = round(_rss_mib(proc.pid), 1)
        finally:
            if proc.poll() is None:
                sent = time.perf_counter()
                proc.send_signal(getattr(signal, f"SIG{args.signal}"))
                try:
                    proc.wait(timeout=args.kill_after)
                    report["sigterm_to_exit_s"] = round(time.perf_counter() - sent, 3)
                    report["exit_code"] = proc.returncode
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                    report["sigterm_to_exit_s"] = None
                    report["exit_code"] = f"killed after {args.kill_after} s"
            stderr.seek(0)
            lines = stderr.read().decode("utf-8", "replace").splitlines()
            report["shutdown"] = (
                "deadline reached" if any("exiting now" in line for line in lines) else "finished"
            )
            report["server_stderr_lines"] = len(lines)
            report["server_stderr_tracebacks"] = sum(
                line.startswith("Traceback (most recent call last)") for line in lines
            )
            report["server_stderr_tail"] = lines[-5:]
    return report


def _format(r: dict[str, Any]) -> str:
    nc = r.get("new_client", {})
    rows = [
        f"server        awm envs serve {r['env']} {' '.join(r['server_args'])}".rstrip(),
        f"flood         {r['requests']} initialize over {r['connections']} connections in "
        f"{r.get('flood_s')} s ({r.get('flood_requests_per_s')} req/s); "
        f"HTTP statuses {r.get('flood_statuses')}; transport errors {r.get('flood_errors')}",
        f"new client    got in: {nc.get('got_in')}  (initialized {nc.get('initialized')}, "
        f"{nc.get('tools')} tools, call {nc.get('call')}, {nc.get('seconds')} s)"
        + (f"\n              error: {nc['error']}" if nc.get("error") else ""),
        f"RSS           {r.get('rss_before_mib')} MiB before -> {r.get('rss_after_flood_mib')} MiB "
        f"after the flood (+{r.get('rss_growth_mib')} MiB)",
        f"{r.get('signal', 'SIGTERM'):13} exit after {r.get('sigterm_to_exit_s')} s "
        f"(code {r.get('exit_code')}, shutdown {r.get('shutdown')})",
        f"server log    {r.get('server_stderr_lines')} stderr lines, "
        f"{r.get('server_stderr_tracebacks')} tracebacks",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="shop", help="environment id or bundle path")
    parser.add_argument("--requests", type=int, default=10_050)
    parser.add_argument("--connections", type=int, default=8, help="keep-alive connections")
    parser.add_argument("--client-timeout", type=float, default=30.0)
    parser.add_argument("--kill-after", type=float, default=60.0, help="SIGKILL after this long")
    parser.add_argument("--signal", choices=["TERM", "INT"], default="TERM", help="how to stop it")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("server_args", nargs="*", help="extra flags for awm envs serve (after --)")
    args = parser.parse_args(argv)
    report = asyncio.run(run(args))
    print(json.dumps(report, indent=2) if args.json else _format(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
