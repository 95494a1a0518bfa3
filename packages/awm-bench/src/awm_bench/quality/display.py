"""The report for people: rich tables on the terminal and ``quality.html``."""

from __future__ import annotations

import html
from typing import Any

from rich.markup import escape
from rich.table import Table

from awm_bench.quality.ratings import CRITERIA, SHORT
from awm_bench.report_html import bar_chart
from awm_core.console import make_console


def _fmt(v: float | None, pct: bool = False) -> str:
    """A mean (``4.00``) or a share (``25%``); ``-`` for none."""
    if v is None:
        return "-"
    return f"{100 * v:.0f}%" if pct else f"{v:.2f}"


def print_quality(data: dict[str, Any]) -> None:
    """The report as rich tables: per task, per environment, env errors per tool."""
    console = make_console()
    threshold = data["threshold"]
    for env in data["environments"]:
        table = Table(title=escape(f"{env['env_id']}: tasks (judge {data['judge']}, 1-5)"))
        table.add_column("task")
        table.add_column("complexity")
        for c in CRITERIA:
            table.add_column(SHORT[c], justify="right")
        table.add_column("reason", overflow="fold", max_width=90)
        for t in env["tasks"]:
            cells = []
            for c in CRITERIA:
                v = t["scores"].get(c)
                cells.append(
                    "-"
                    if v is None
                    else (f"[red]{v}[/red]" if v < threshold else f"[green]{v}[/green]")
                )
            reason = (
                f"[red]unjudged: {escape(t['error'])}[/red]"
                if t["error"]
                else escape(t["reasoning"])
            )
            name = t["task_id"] + (" (refusal)" if t["expects_refusal"] else "")
            table.add_row(escape(name), t["complexity"], *cells, reason)
        console.print(table)
    summary = Table(title=escape(f"environment quality (flag: score < {threshold})"))
    for col in (
        "env",
        "tasks",
        *(SHORT[c] for c in CRITERIA),
        "flagged",
        "unjudged",
        "env errors",
        "validation",
    ):
        summary.add_column(col, justify="left" if col in ("env", "validation") else "right")
    for env in data["environments"]:
        means = [
            f"{_fmt(env['mean'][c])} ({_fmt(env['below_threshold'][c], pct=True)} low)"
            for c in CRITERIA
        ]
        errs = env.get("env_errors")
        shown = f"{errs['env_errors']}/{errs['tool_calls']} calls" if errs else "no rollouts"
        summary.add_row(
            escape(env["env_id"]),
            str(len(env["tasks"])),
            *means,
            str(len(env["flagged"])),
            str(len(env["unjudged"])),
            shown,
            escape(env["validation"].split(":")[0]),
        )
    console.print(summary)
    failing = [
        (env["env_id"], tool, row)
        for env in data["environments"]
        for tool, row in (env.get("env_errors") or {}).get("by_tool", {}).items()
        if row["env_errors"]
    ]
    if failing:
        tools = Table(title="environment errors by tool (failures on the environment's side)")
        for col in ("env", "tool", "calls", "env errors", "agent errors", "example"):
            tools.add_column(col)
        for env_id, tool, row in failing:
            example = row["examples"][0] if row["examples"] else ""
            tools.add_row(
                escape(env_id),
                escape(tool),
                str(row["calls"]),
                str(row["env_errors"]),
                str(row["agent_errors"]),
                escape(example[:120]),
            )
        console.print(tools)
    console.print(f"rollouts: {escape(str(data['rollouts']))}", highlight=False)


def render_quality_html(data: dict[str, Any]) -> str:
    """``quality.html``: the summary, a chart of mean scores, and every task with its reason."""

    def esc(v: Any) -> str:
        return html.escape(str(v), quote=True)

    css = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f4f4f4}.low{background:#f8d7da}.ok{color:#137333}"
    )
    envs = data["environments"]
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>awm bench quality</title><style>{css}</style></head><body>",
        "<h1>Environment quality</h1>",
        f"<p>judge <code>{esc(data['judge'])}</code>, scale {esc(data['scale'])}, a score under "
        f"{data['threshold']} flags the task; rollouts: {esc(data['rollouts'])}</p>",
        bar_chart(
            "Mean score per criterion",
            [SHORT[c] for c in CRITERIA],
            {e["env_id"]: [e["mean"][c] for c in CRITERIA] for e in envs},
            y_max=5.0,
            y_label="mean (1-5)",
        ),
        "<table><tr><th>environment</th><th>tasks</th>"
        + "".join(f"<th>{SHORT[c]}</th>" for c in CRITERIA)
        + "<th>flagged</th><th>env errors</th><th>validation</th></tr>",
    ]
    for e in envs:
        errs = e.get("env_errors")
        counted = f"{errs['env_errors']}/{errs['tool_calls']} calls" if errs else "no rollouts"
        out.append(
            f"<tr><td>{esc(e['env_id'])}</td><td>{len(e['tasks'])}</td>"
            + "".join(f"<td>{_fmt(e['mean'][c])}</td>" for c in CRITERIA)
            + f"<td>{len(e['flagged'])}</td><td>{esc(counted)}</td>"
            f"<td>{esc(e['validation'])}</td></tr>"
        )
    out.append("</table><h2>Tasks</h2><table><tr><th>environment</th><th>task</th>")
    out.append("".join(f"<th>{SHORT[c]}</th>" for c in CRITERIA) + "<th>reason</th></tr>")
    for e in envs:
        for t in e["tasks"]:
            cells = "".join(
                f"<td class='{'low' if (v := t['scores'].get(c)) is not None and v < data['threshold'] else ''}'>"
                f"{'-' if v is None else v}</td>"
                for c in CRITERIA
            )
            reason = f"unjudged: {t['error']}" if t["error"] else t["reasoning"]
            out.append(
                f"<tr><td>{esc(e['env_id'])}</td><td>{esc(t['task_id'])}</td>{cells}<td>{esc(reason)}</td></tr>"
            )
    out.append("</table>")
    for e in envs:
        errs = e.get("env_errors")
        if not errs or not errs["by_tool"]:
            continue
        out.append(
            f"<h2>{esc(e['env_id'])}: tool calls in rollouts</h2><table><tr><th>tool</th><th>calls</th>"
            "<th>env errors</th><th>agent errors</th><th>example</th></tr>"
        )
        for tool, row in errs["by_tool"].items():
            out.append(
                f"<tr><td>{esc(tool)}</td><td>{row['calls']}</td><td>{row['env_errors']}</td>"
                f"<td>{row['agent_errors']}</td><td>{esc((row['examples'] or [''])[0])}</td></tr>"
            )
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)
