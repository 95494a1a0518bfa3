"""A benchmark run's report: ``bench-results/RUN/report.json`` and ``report.html``.

A run folder holds one sub-folder per benchmark with its ``summary.json``; the
report gathers them into tables laid out like the paper's (BFCLv3 overall and
categories; awm tasks Pass@1 by complexity), with the paper's published numbers as
reference rows.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from awm_bench.bfcl.cases import CATEGORIES, GROUPS

# Published anchors (the AWM paper): BFCLv3 overall, before and after AWM training.
REFERENCE_ROWS: dict[str, list[dict[str, Any]]] = {
    "bfcl": [
        {"label": "Qwen3-8B (paper)", "groups": {"overall": 0.5383}},
        {"label": "Qwen3-8B + AWM (paper)", "groups": {"overall": 0.6594}},
    ],
}

BFCL_GROUP_COLUMNS = ("overall", "non_live", "live", "multi_turn")


def load_run(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """``{benchmark: [summary per model]}`` from ``run_dir/BENCHMARK/MODEL/summary.json``;
    the oracle first, then the models in name order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for summary in sorted(run_dir.glob("*/*/summary.json")):
        data = json.loads(summary.read_text(encoding="utf-8"))
        out.setdefault(summary.parent.parent.name, []).append(data)
    for rows in out.values():
        rows.sort(
            key=lambda d: (
                d.get("model") != "oracle",
                bool(d.get("corruption")),
                str(d.get("model")),
            )
        )
    return out


def _label(summary: dict[str, Any]) -> str:
    model = str(summary.get("model", ""))
    return f"{model} (corrupted: {summary['corruption']})" if summary.get("corruption") else model


def build_report(run_dir: Path) -> dict[str, Any]:
    """Write ``report.json`` and ``report.html`` in ``run_dir``; return the JSON."""
    benchmarks = load_run(run_dir)
    report = {
        "run": run_dir.name,
        "benchmarks": benchmarks,
        "reference": {k: v for k, v in REFERENCE_ROWS.items() if k in benchmarks},
    }
    (run_dir / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (run_dir / "report.html").write_text(render_html(report), encoding="utf-8")
    return report


def _pct(value: Any) -> str:
    return f"{100 * value:.2f}" if isinstance(value, int | float) else ""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: list[str], rows: list[list[str]], *, reference_from: int | None = None) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="ref"' if reference_from is not None and i >= reference_from else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def bfcl_rows(summary: dict[str, Any]) -> list[list[str]]:
    """One row per mode: model, mode, the four v3 groups, then every category."""
    rows = []
    for mode, data in summary.get("modes", {}).items():
        groups = data.get("groups", {})
        cats = data.get("categories", {})
        # like bfcl-eval's leaderboard: a group missing a category is N/A, not a score
        complete = {g: all(c in cats for c in members) for g, members in GROUPS.items()}
        complete["overall"] = all(complete.values())
        rows.append(
            [_label(summary), mode]
            + [_pct(groups.get(g)) if complete[g] else "N/A" for g in BFCL_GROUP_COLUMNS]
            + [_pct(cats[c]["accuracy"]) if c in cats else "" for c in CATEGORIES]
        )
    return rows


def render_html(report: dict[str, Any]) -> str:
    """The report page: one table per benchmark, reference rows shaded."""
    sections = [f"<h1>awm benchmark run {_esc(report['run'])}</h1>"]
    benchmarks = report["benchmarks"]
    if "bfcl" in benchmarks:
        summary = benchmarks["bfcl"][0]
        headers = ["Model", "Mode", "Overall", "Non-Live", "Live", "Multi-Turn", *CATEGORIES]
        rows = [row for s in benchmarks["bfcl"] for row in bfcl_rows(s)]
        n = len(rows)
        for ref in REFERENCE_ROWS["bfcl"]:
            rows.append(
                [ref["label"], "paper"]
                + [_pct(ref["groups"].get(g)) for g in BFCL_GROUP_COLUMNS]
                + [""] * len(CATEGORIES)
            )
        sections.append(f"<h2>BFCLv3 ({_esc(summary.get('subset', ''))})</h2>")
        sections.append(_table(headers, rows, reference_from=n))
        sections.append(
            "<p>Accuracy in %. Groups as bfcl-eval computes them: "
            + "; ".join(f"{g}: {', '.join(c)}" for g, c in GROUPS.items())
            + ". Oracle ceiling on the full set: 4,430 / 4,441 (see awm_bench.bfcl.cases.ORACLE_UNREACHABLE).</p>"
        )
    for name, summaries in benchmarks.items():
        if name == "bfcl":
            continue
        sections.append(_generic_section(name, summaries))
    walls = [
        [name, _label(s), str(s.get("wall_s", ""))] for name, ss in benchmarks.items() for s in ss
    ]
    sections.append("<h2>Wall time (s)</h2>" + _table(["Benchmark", "Model", "Wall s"], walls))
    sections.append(_sampling_section(benchmarks))
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}tr.ref{background:#eef}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>awm bench {_esc(report['run'])}"
        f"</title><style>{style}</style></head><body>{''.join(sections)}</body></html>"
    )


def _sampling_section(benchmarks: dict[str, list[dict[str, Any]]]) -> str:
    """What each model decoded with (the benchmark's defaults, overridden by the run's flags)."""
    names = ("temperature", "top_p", "max_tokens", "seed")
    rows = [
        [name, _label(s), *(_unset(s.get("sampling", {}).get(n)) for n in names)]
        + [str(s.get("trials", ""))]
        for name, ss in benchmarks.items()
        for s in ss
        if s.get("model") != "oracle"
    ]
    if not rows:
        return ""
    headers = ["Benchmark", "Model", "Temperature", "Top-p", "Max tokens", "Seed", "Trials"]
    return (
        "<h2>Sampling</h2>"
        + _table(headers, rows)
        + "<p>Trial n samples with seed + n; an empty cell is the backend's own default.</p>"
    )


def _unset(value: Any) -> str:
    return "" if value is None else str(value)


def _generic_section(name: str, summaries: list[dict[str, Any]]) -> str:
    """A benchmark whose summary gives each mode a flat ``table`` of scores (column -> value)."""
    title = summaries[0].get("title", name)
    columns: list[str] = []
    for s in summaries:
        for data in s.get("modes", {}).values():
            columns += [c for c in data.get("table", {}) if c not in columns]
    rows = []
    for s in summaries:
        for mode, data in s.get("modes", {}).items():
            table = data.get("table", {})
            rows.append(
                [_label(s), mode]
                + [
                    _pct(table[c]) if isinstance(table.get(c), float) else str(table.get(c, ""))
                    for c in columns
                ]
            )
    note = summaries[0].get("note", "")
    return (
        f"<h2>{_esc(title)} ({_esc(summaries[0].get('subset', ''))})</h2>"
        + _table(["Model", "Mode", *columns], rows)
        + (f"<p>{_esc(note)}</p>" if note else "")
    )
