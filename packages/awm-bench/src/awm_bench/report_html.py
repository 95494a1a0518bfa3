"""A self-contained HTML report with inline SVG charts (no plotting library, no network).

The report is one file a newcomer can open anywhere: reward by complexity
bucket, the tool-call latency histogram and a per-task outcome table.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from awm_bench.evaluate import BUCKETS, EnvReport

COLORS = ["#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477"]
LABEL_COLORS = {
    "Completed": "#d9f2d9",
    "Partially Completed": "#fff3cd",
    "Agent Error": "#f8d7da",
    "Environment Error": "#e2e3e5",
}


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round axis ticks covering ``lo..hi``: a step of 1, 2, 2.5 or 5 times a power of ten,
    at most ``most`` ticks (0..5 by 1 for scores, 0..1 by 0.2 for rewards, 0..150 by 50)."""
    span = (hi - lo) or 1.0
    magnitude = 10 ** math.floor(math.log10(span / (most - 1)))
    step = next(
        m * magnitude for m in (1, 2, 2.5, 5, 10) if span / (m * magnitude) <= most - 1 + 1e-9
    )
    start = math.floor(lo / step + 1e-9) * step
    count = math.ceil((hi - start) / step - 1e-9)
    return [round(start + i * step, 10) for i in range(count + 1)]


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    y_max: float | None = None,
    y_label: str = "",
    width: int = 640,
    height: int = 260,
) -> str:
    """Grouped vertical bars; ``None`` values leave a gap (no tasks in that bucket)."""
    left, bottom, top = 48, 40, 28
    plot_w, plot_h = width - left - 10, height - bottom - top
    values = [v for vs in series.values() for v in vs if v is not None]
    hi = y_max if y_max is not None else (max(values) if values else 1.0) or 1.0
    lo = min(0.0, min(values) if values else 0.0)
    ticks = nice_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    span = (hi - lo) or 1.0

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - lo) / span)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">'
    ]
    parts.append(
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{_esc(title)}</text>'
    )
    for tick in ticks:
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#ddd"/>'
        )
        parts.append(
            f'<text x="{left - 4}" y="{y(tick) + 4:.1f}" text-anchor="end" font-size="11">{tick:g}</text>'
        )
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#333"/>'
    )
    group_w = plot_w / max(1, len(categories))
    bar_w = group_w * 0.8 / max(1, len(series))
    for ci, cat in enumerate(categories):
        gx = left + ci * group_w
        parts.append(
            f'<text x="{gx + group_w / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle" font-size="12">{_esc(cat)}</text>'
        )
        for si, (_, vals) in enumerate(series.items()):
            v = vals[ci]
            if v is None:
                continue
            x = gx + group_w * 0.1 + si * bar_w
            y0, y1 = sorted((y(0), y(v)))
            parts.append(
                f'<rect x="{x:.1f}" y="{y0:.1f}" width="{bar_w - 2:.1f}" height="{max(1.0, y1 - y0):.1f}" '
                f'fill="{COLORS[si % len(COLORS)]}"><title>{_esc(cat)}: {v:.3g}</title></rect>'
            )
    if y_label:
        parts.append(
            f'<text x="12" y="{top + plot_h / 2}" transform="rotate(-90 12 {top + plot_h / 2})" '
            f'text-anchor="middle" font-size="11">{_esc(y_label)}</text>'
        )
    lx = left
    for si, name in enumerate(series):
        parts.append(
            f'<rect x="{lx}" y="{height - 14}" width="10" height="10" fill="{COLORS[si % len(COLORS)]}"/>'
        )
        parts.append(f'<text x="{lx + 14}" y="{height - 5}" font-size="11">{_esc(name)}</text>')
        lx += 16 + 7 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def latency_histogram(
    latencies_s: Sequence[float], *, bins_per_decade: int = 4
) -> tuple[list[str], list[float]]:
    """Log-spaced bins (µs) so sub-millisecond calls and slow outliers both show."""
    us = [max(1.0, x * 1e6) for x in latencies_s]
    if not us:
        return [], []
    lo = math.floor(math.log10(min(us)) * bins_per_decade)
    hi = math.floor(math.log10(max(us)) * bins_per_decade) + 1
    counts = [0] * (hi - lo)
    for v in us:
        counts[min(hi - lo - 1, math.floor(math.log10(v) * bins_per_decade) - lo)] += 1

    def edge(k: int) -> str:
        v = 10 ** (k / bins_per_decade)
        return f"{v / 1000:.1f}ms" if v >= 1000 else f"{v:.0f}µs"

    return [edge(lo + i) for i in range(hi - lo)], [float(c) for c in counts]


def _reset(report: EnvReport) -> str:
    median = report.reset_latency_us.get("median")
    return "-" if median is None else f"{median:.1f}"


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def render_report(
    *,
    title: str,
    reports: Sequence[EnvReport],
    synthesis: dict[str, Any] | None = None,
    validation: Sequence[dict[str, Any]] = (),
    facts: dict[str, Any] | None = None,
) -> str:
    """The whole report as one HTML string."""
    css = (
        "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        "th{background:#f4f4f4}.ok{color:#137333}.bad{color:#b3261e}code{background:#f4f4f4;padding:1px 4px}"
    )
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_esc(title)}</title><style>{css}</style></head><body>"
    ]
    out.append(f"<h1>{_esc(title)}</h1>")
    if facts:
        out.append(
            "<table>"
            + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in facts.items())
            + "</table>"
        )

    if synthesis:
        out.append(
            "<h2>Synthesis</h2><table><tr><th>environment</th><th>stage</th><th>attempts</th><th>what was corrected</th></tr>"
        )
        for row in synthesis.get("corrections", []):
            out.append(
                f"<tr><td>{_esc(row.get('env'))}</td><td>{_esc(row.get('stage'))}</td>"
                f"<td>{_esc(row.get('attempts'))}</td><td>{_esc(row.get('detail', ''))}</td></tr>"
            )
        out.append("</table>")

    if validation:
        out.append(
            "<h2>Validation (<code>awm envs validate</code>)</h2><table><tr><th>environment</th><th>tasks proven</th><th>result</th></tr>"
        )
        for v in validation:
            ok = v.get("passed")
            out.append(
                f"<tr><td>{_esc(v['env_id'])}</td><td>{_esc(v['proven'])}/{_esc(v['tasks'])}</td>"
                f"<td class='{'ok' if ok else 'bad'}'>{'pass' if ok else 'FAIL'}</td></tr>"
            )
        out.append("</table>")

    out.append(
        "<h2>Episodes</h2><table><tr><th>environment</th><th>policy</th><th>tasks</th><th>pass rate</th>"
        "<th>by complexity</th><th>rewards</th><th>env calls/s</th><th>reset median (µs)</th></tr>"
    )
    for r in reports:
        buckets = ", ".join(f"{b} {p}/{t}" for b, (p, t) in r.pass_rate_by_bucket().items())
        rewards = ", ".join(f"{k}: {v}" for k, v in r.reward_distribution().items())
        out.append(
            f"<tr><td>{_esc(r.env_id)}</td><td>{_esc(r.policy)}</td><td>{len(r.outcomes)}</td>"
            f"<td>{r.pass_rate:.0%}</td><td>{_esc(buckets)}</td><td>{_esc(rewards)}</td>"
            f"<td>{r.env_calls_per_s:,.0f}</td><td>{_reset(r)}</td></tr>"
        )
    out.append("</table>")

    series: dict[str, list[float | None]] = {}
    for r in reports:
        by: dict[str, list[float]] = {}
        for o in r.outcomes:
            by.setdefault(o.complexity, []).append(o.reward)
        series[f"{r.env_id} · {r.policy}"] = [_mean(by.get(b, [])) for b in BUCKETS]
    out.append("<h2>Reward by complexity bucket</h2>")
    out.append(
        bar_chart(
            "Mean reward per complexity bucket", BUCKETS, series, y_max=1.0, y_label="mean reward"
        )
    )

    latencies = [x for r in reports for o in r.outcomes for x in o.tool_latencies_s]
    edges, counts = latency_histogram(latencies)
    if edges:  # no section when no tool was called
        out.append("<h2>Tool-call latency</h2>")
        out.append(
            bar_chart(
                f"{len(latencies)} tool calls (in-process or sandboxed instance)",
                edges,
                {"calls": counts},
                y_label="calls",
                width=900,
            )
        )

    out.append(
        "<h2>Per-task outcomes</h2><table><tr><th>environment</th><th>policy</th><th>task</th><th>complexity</th>"
        "<th>verdict</th><th>reward</th><th>steps</th><th>calls (errors)</th><th>ended by</th></tr>"
    )
    for r in reports:
        for o in r.outcomes:
            color = LABEL_COLORS.get(o.label, "#fff")
            ended = o.termination + (f": {o.termination_reason}" if o.termination_reason else "")
            out.append(
                f"<tr style='background:{color}'><td>{_esc(o.env_id)}</td><td>{_esc(o.policy)}</td>"
                f"<td>{_esc(o.task_id)}{' (refusal)' if o.expects_refusal else ''}</td><td>{_esc(o.complexity)}</td>"
                f"<td>{_esc(o.label)}</td><td>{o.reward:+.1f}</td><td>{o.steps}</td>"
                f"<td>{o.tool_calls} ({o.tool_errors})</td><td>{_esc(ended[:160])}</td></tr>"
            )
    out.append("</table></body></html>")
    return "\n".join(out)
