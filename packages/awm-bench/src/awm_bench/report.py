"""A benchmark run's report: ``bench-results/RUN/report.json`` and ``report.html``.

A run folder holds one sub-folder per benchmark with its ``summary.json``; the
report gathers them into tables laid out like the paper's (BFCLv3 overall and
categories; awm tasks Pass@1 by complexity), with the paper's published numbers as
reference rows (:mod:`awm_bench.paper` keeps them, and says which are absent).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from awm_bench import paper
from awm_bench.bfcl.cases import CATEGORIES, GROUPS


def _reference_rows() -> dict[str, list[dict[str, Any]]]:
    """The paper's Table 4 rows that have numbers, per benchmark, in [0, 1]."""
    out: dict[str, list[dict[str, Any]]] = {}
    for bench in paper.TABLE4_COLUMNS:
        for ref in paper.reference_rows("4", bench):
            if ref.values:
                values = ref.fractions()
                row = {"label": ref.label, "model": ref.model, "method": ref.method}
                out.setdefault(bench, []).append(
                    row | {"values": values, "groups": values, "source": ref.source}
                )
    return out


REFERENCE_ROWS: dict[str, list[dict[str, Any]]] = _reference_rows()
"""The paper's numbers shown as reference rows (from :mod:`awm_bench.paper`)."""

BFCL_GROUP_COLUMNS = ("overall", "non_live", "live", "multi_turn")


def run_summaries(run_dir: Path) -> dict[str, list[tuple[Path, dict[str, Any]]]]:
    """``{benchmark: [(model folder, summary)]}`` from ``run_dir/BENCHMARK/MODEL/summary.json``;
    the oracle first, then the models in name order."""
    out: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for summary in sorted(run_dir.glob("*/*/summary.json")):
        data = json.loads(summary.read_text(encoding="utf-8"))
        out.setdefault(summary.parent.parent.name, []).append((summary.parent, data))
    for rows in out.values():
        rows.sort(
            key=lambda fd: (
                fd[1].get("model") != "oracle",
                bool(fd[1].get("corruption")),
                str(fd[1].get("model")),
            )
        )
    return out


def load_run(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """``{benchmark: [summary per model]}`` (see :func:`run_summaries`)."""
    return {b: [s for _, s in rows] for b, rows in run_summaries(run_dir).items()}


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


def esc(value: Any) -> str:
    """``value`` as HTML text."""
    return html.escape(str(value), quote=True)


def html_table(
    headers: list[str],
    rows: list[list[str]],
    *,
    reference_from: int | None = None,
    classes: list[str] | None = None,
    head_html: str = "",
) -> str:
    """A table; rows from ``reference_from`` on are shaded as reference rows, or each row
    gets its class from ``classes``; ``head_html`` replaces the one header row built from
    ``headers`` (e.g. grouped headers)."""
    head = head_html or "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"
    body = []
    for i, row in enumerate(rows):
        name = classes[i] if classes else ""
        if not classes and reference_from is not None and i >= reference_from:
            name = "ref"
        cls = f' class="{name}"' if name else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
    return f"<table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}tr.ref{background:#eef}"
    "tr.delta{font-weight:bold;background:#f6f6f6}p.note{font-size:12px;color:#444}"
)


def html_page(title: str, sections: list[str]) -> str:
    """One self-contained page (the report's style) holding ``sections``."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{STYLE}</style></head><body>{''.join(sections)}</body></html>"
    )


def bfcl_rows(summary: dict[str, Any]) -> list[list[str]]:
    """One row per mode: model, mode, the four v3 groups, then every category."""
    rows = []
    for mode, data in summary.get("modes", {}).items():
        groups = data.get("groups", {})
        cats = data.get("categories", {})
        # like bfcl-eval's leaderboard: a group missing a category is N/A, not a score
        complete = {g: all(c in cats for c in members) for g, members in GROUPS.items()}
        complete["overall"] = all(complete.values())
        # native mode names bfcl-eval's handler (awm bench run bfcl --handler)
        shown = f"{mode} ({data['handler']})" if data.get("handler") else mode
        rows.append(
            [_label(summary), shown]
            + [_pct(groups.get(g)) if complete[g] else "N/A" for g in BFCL_GROUP_COLUMNS]
            + [_pct(cats[c]["accuracy"]) if c in cats else "" for c in CATEGORIES]
        )
    return rows


def render_html(report: dict[str, Any]) -> str:
    """The report page: one table per benchmark, reference rows shaded."""
    sections = [f"<h1>awm benchmark run {esc(report['run'])}</h1>"]
    benchmarks = report["benchmarks"]
    if "bfcl" in benchmarks:
        summary = benchmarks["bfcl"][0]
        headers = ["Model", "Mode", "Overall", "Non-Live", "Live", "Multi-Turn", *CATEGORIES]
        rows = [row for s in benchmarks["bfcl"] for row in bfcl_rows(s)]
        n = len(rows)
        for ref in REFERENCE_ROWS.get("bfcl", []):
            rows.append(
                [ref["label"], "paper"]
                + [_pct(ref["groups"].get(g)) for g in BFCL_GROUP_COLUMNS]
                + [""] * len(CATEGORIES)
            )
        sections.append(f"<h2>BFCLv3 ({esc(summary.get('subset', ''))})</h2>")
        sections.append(html_table(headers, rows, reference_from=n))
        sections.append(
            "<p>Accuracy in %. Groups as bfcl-eval computes them: "
            + "; ".join(f"{g}: {', '.join(c)}" for g, c in GROUPS.items())
            + ". Oracle ceiling on the full set: 4,430 / 4,441 (see awm_bench.bfcl.cases.ORACLE_UNREACHABLE).</p>"
            + _paper_note("bfcl")
        )
    for name, summaries in benchmarks.items():
        if name == "bfcl":
            continue
        sections.append(_generic_section(name, summaries))
    walls = [
        [name, _label(s), str(s.get("wall_s", ""))] for name, ss in benchmarks.items() for s in ss
    ]
    sections.append("<h2>Wall time (s)</h2>" + html_table(["Benchmark", "Model", "Wall s"], walls))
    sections.append(_sampling_section(benchmarks))
    return html_page(f"awm bench {report['run']}", sections)


def _paper_note(bench: str) -> str:
    """Where the paper's reference rows come from, or why they are absent (Table 4)."""
    if bench not in paper.TABLE4_COLUMNS:
        return ""
    why = paper.absent("4", bench)
    shaded = "Shaded rows: the paper's Table 4. " if bench in REFERENCE_ROWS else ""
    text = f"{shaded}Reference rows ({paper.CITATION}): {why or 'complete'}."
    return f"<p class='note'>{esc(text)}</p>"


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
        + html_table(headers, rows)
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
    measured = len(rows)
    # a benchmark's own published numbers (summary "reference_rows": column -> value under
    # the same column names), shaded like the paper's
    refs = summaries[0].get("reference_rows", [])
    for ref in refs:
        cells = {c: ref.get(c.replace(" ", "_").lower()) for c in columns}
        rows.append(
            [str(ref.get("label", "")), "published"]
            + [_pct(cells[c]) if isinstance(cells[c], float) else "" for c in columns]
        )
    note = summaries[0].get("note", "")
    source = summaries[0].get("reference_source", "")
    return (
        f"<h2>{esc(title)} ({esc(summaries[0].get('subset', ''))})</h2>"
        + html_table(["Model", "Mode", *columns], rows, reference_from=measured)
        + (f"<p>{esc(note)}</p>" if note else "")
        + (f"<p class='note'>Shaded rows: published ({esc(source)}).</p>" if refs else "")
        + _paper_note(name)
    )
