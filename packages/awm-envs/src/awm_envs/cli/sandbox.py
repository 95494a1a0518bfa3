"""``awm envs sandbox``: what the sandbox contains on this machine, checked from inside it."""

from __future__ import annotations

import json
import time

import click


@click.command(name="sandbox")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--require-isolation",
    is_flag=True,
    envvar="AWM_REQUIRE_ISOLATION",
    help="Fail (exit 1) unless OS isolation (bubblewrap) is available.",
)
def sandbox_command(as_json: bool, require_isolation: bool) -> None:
    """Report how generated code is contained here, probing from inside the sandbox.

    Starts a sandboxed process and tries what generated code must not do (read
    /etc/passwd, write outside /tmp, reach the host's loopback or the
    internet, see API keys). See docs/security.md.
    """
    from awm_envs.pool.worker_template import template_refusal
    from awm_envs.sandbox import ForkServer, IsolationUnavailable, Limits, detect, landlock_domain
    from awm_envs.sandbox.cgroups import bound

    found = detect()
    try:
        started = time.perf_counter()
        with ForkServer(
            "awm_envs.sandbox.probe:inspect", require_isolation=require_isolation or None
        ) as fs:
            start_ms = (time.perf_counter() - started) * 1e3
            reply, _ = fs.run({})
    except IsolationUnavailable as exc:
        raise click.ClickException(str(exc)) from exc
    report = {
        "isolation": found.kind,
        "bwrap": found.bwrap,
        "reason": found.reason,
        "template_start_ms": round(start_ms, 1),
        "process_bound": bound(Limits().processes),
        "forked_workers": _forked_workers(template_refusal(), landlock_domain.abi()),
        "seen_from_inside": reply.get("seen", reply),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"isolation: {found.kind}" + (f" ({found.reason})" if found.reason else ""))
    if found.bwrap:
        click.echo(f"bwrap:     {found.bwrap}")
    click.echo(f"sandbox start: {start_ms:.0f} ms")
    click.echo(f"process bound: {report['process_bound']}")
    click.echo(f"forked workers: {report['forked_workers']}")
    for what, outcome in report["seen_from_inside"].items():
        click.echo(f"  {what:<40} {outcome}")


def _forked_workers(refusal: str | None, abi: int) -> str:
    """What ``template=True`` gives here: separated forks, or a sandbox per worker, and why."""
    if refusal is None:
        return f"separated (a Landlock domain each, ABI {abi}; the template is not dumpable)"
    return f"refused ({refusal}); each worker gets a sandbox of its own"
