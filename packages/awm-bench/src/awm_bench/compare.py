"""``awm bench compare BASE TRAINED``: checkpoints side by side, laid out as the paper's tables.

Each run is represented by its model (not its oracle, when it has one), per benchmark
and mode. Three views, all in :func:`compare_runs`'s result (``--json``):

- ``table4``, the paper's Table 4 layout: one row per run, the delta (last run minus
  first), then the paper's reference rows (:mod:`awm_bench.paper`); columns per
  benchmark: BFCLv3's groups and its relevance / irrelevance columns, τ²-bench pass^1
  per domain and their mean, MCP-Universe success rate per domain and overall.
- ``table5``, the paper's Table 5 layout: the share of cases passed per complexity
  bucket, from the runs' per-case journals (``BENCH/MODEL/MODE.jsonl``): BFCLv3 by the
  tool calls a case requires (``gt_calls``), τ²-bench by its ground-truth actions
  (``gt_actions``, every trial of a task counted).
- ``benchmarks``: every score the runs share, per benchmark and mode (the only view
  for benchmarks outside the paper's tables, e.g. awm's own ``tasks``).

Scores are in [0, 1]; deltas too (the renderers print percent and points).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from awm_bench import paper
from awm_bench.bfcl.cases import CATEGORIES, GROUPS
from awm_bench.journal import read_rows
from awm_bench.report import BFCL_GROUP_COLUMNS, esc, html_page, html_table, run_summaries

MODE_ORDER = ("awm", "native")

Found = tuple[Path, dict[str, Any]]
"""A model's results in a run: its folder and its ``summary.json``."""


def _scores(summary: dict[str, Any], mode: str) -> dict[str, float]:
    data = summary.get("modes", {}).get(mode, {})
    out = {g: float(v) for g, v in data.get("groups", {}).items()}
    for cat, s in data.get("categories", {}).items():
        out[cat] = float(s["accuracy"])
    for key, value in data.get("table", {}).items():  # other benchmarks: flat score tables
        if isinstance(value, int | float):
            out[key] = float(value)
    return out


def primary(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The result a run stands for: its (first) real model, else its oracle."""
    real = [s for s in summaries if s.get("model") != "oracle" and not s.get("corruption")]
    return (real or summaries)[0]


def _primary(found: list[Found]) -> Found:
    chosen = primary([s for _, s in found])
    return next(f for f in found if f[1] is chosen)


def compare_runs(run_dirs: list[Path]) -> dict[str, Any]:
    """The runs' models side by side: ``table4``, ``table5`` and ``benchmarks`` (see the
    module's doc); deltas are last run minus first."""
    runs: list[dict[str, Found]] = [
        {b: _primary(found) for b, found in run_summaries(d).items()} for d in run_dirs
    ]
    names = [d.name for d in run_dirs]
    return {
        "runs": names,
        "paper": paper.CITATION,
        "table4": _table4(names, runs),
        "table5": _table5(names, runs),
        "benchmarks": _shared_scores(runs),
    }


def _shared_scores(runs: list[dict[str, Found]]) -> dict[str, Any]:
    """``{benchmark: {"models", "modes": {mode: {metric: {"runs", "delta"}}}}}`` over the
    benchmarks, modes and metrics every run has."""
    out: dict[str, Any] = {}
    shared = set(runs[0]).intersection(*runs[1:]) if runs else set()
    for bench in sorted(shared):
        summaries = [r[bench][1] for r in runs]
        modes = set(summaries[0].get("modes", {})).intersection(
            *(s.get("modes", {}) for s in summaries[1:])
        )
        per_mode: dict[str, Any] = {}
        for mode in _ordered(modes):
            scores = [_scores(s, mode) for s in summaries]
            metrics = [m for m in _order(scores[0]) if all(m in s for s in scores)]
            per_mode[mode] = {
                m: {"runs": [s[m] for s in scores], "delta": scores[-1][m] - scores[0][m]}
                for m in metrics
            }
        out[bench] = {"models": [s.get("model") for s in summaries], "modes": per_mode}
    return out


def _order(scores: dict[str, float]) -> list[str]:
    known = [*BFCL_GROUP_COLUMNS, *CATEGORIES]
    return [m for m in known if m in scores] + sorted(m for m in scores if m not in known)


def _ordered(modes: set[str]) -> list[str]:
    return [m for m in MODE_ORDER if m in modes] + sorted(modes - set(MODE_ORDER))


def _delta(rows: list[dict[str, Any]], keys: list[str]) -> dict[str, float | None]:
    first, last = rows[0]["values"], rows[-1]["values"]
    return {
        k: (last[k] - first[k] if first.get(k) is not None and last.get(k) is not None else None)
        for k in keys
    }


def _references(table: str, bench: str) -> list[dict[str, Any]]:
    return [
        {
            "label": r.label,
            "model": r.model,
            "method": r.method,
            "values": r.fractions(),
            "source": r.source,
        }
        for r in paper.reference_rows(table, bench)
        if r.values
    ]


# --------------------------------------------------------------------------- Table 4


def table4_values(bench: str, mode_data: dict[str, Any]) -> dict[str, float | None]:
    """One mode's Table 4 cells for ``bench`` (None where the run has no such score)."""
    if bench == "bfcl":
        return _bfcl_values(mode_data)
    if bench == "tau2":
        domains = mode_data.get("domains", {})
        out: dict[str, float | None] = {
            d: domains.get(d, {}).get("pass^1") for d in ("airline", "retail", "telecom")
        }
        known = [v for v in out.values() if v is not None]
        # the mean over the three domains, as the paper's: not over a subset of them
        out["average"] = sum(known) / 3 if len(known) == 3 else None
        return out
    if bench == "mcpuniverse":
        out = {d: s.get("SR") for d, s in mode_data.get("domains", {}).items()}
        out["overall"] = mode_data.get("headline")
        return out
    return {}


def _bfcl_values(data: dict[str, Any]) -> dict[str, float | None]:
    cats = {c: s["accuracy"] for c, s in data.get("categories", {}).items()}
    groups = data.get("groups", {})
    # bfcl-eval counts a missing category as 0 and shows its group as N/A: so does awm
    complete = {
        g: data.get("complete") is not False or all(c in cats for c in members)
        for g, members in GROUPS.items()
    }
    complete["overall"] = all(complete.values())
    out: dict[str, float | None] = {
        g: groups.get(g) if complete[g] else None for g in BFCL_GROUP_COLUMNS
    }
    out["relevance"] = cats.get("live_relevance")
    irrelevance = [cats[c] for c in ("irrelevance", "live_irrelevance") if c in cats]
    out["irrelevance"] = sum(irrelevance) / 2 if len(irrelevance) == 2 else None
    return out


def _table4(names: list[str], runs: list[dict[str, Found]]) -> dict[str, Any]:
    """``{mode: {benchmark: {title, columns, rows, delta, reference, reference_absent}}}``."""
    benches = [b for b in paper.TABLE4_COLUMNS if any(b in r for r in runs)]
    modes = _ordered({m for r in runs for b in benches if b in r for m in r[b][1].get("modes", {})})
    out: dict[str, Any] = {}
    for mode in modes:
        per_bench: dict[str, Any] = {}
        for bench in benches:
            rows: list[dict[str, Any]] = []
            for name, run in zip(names, runs, strict=True):
                found = run.get(bench)
                data = found[1].get("modes", {}).get(mode) if found else None
                values = table4_values(bench, data) if data is not None else {}
                rows.append(
                    {
                        "run": name,
                        "model": found[1].get("model") if found else None,
                        "values": values,
                    }
                )
            if all(not r["values"] for r in rows):
                continue
            columns = [{"key": c.key, "label": c.label} for c in paper.TABLE4_COLUMNS[bench]]
            known = {c["key"] for c in columns}
            for row in rows:  # a run's own columns (e.g. offline MCP-Universe domains) after
                for key in row["values"]:
                    if key not in known:
                        columns.insert(
                            len(columns) - (bench == "mcpuniverse"), {"key": key, "label": key}
                        )
                        known.add(key)
            keys = [c["key"] for c in columns]
            for row in rows:
                row["values"] = {k: row["values"].get(k) for k in keys}
            per_bench[bench] = {
                "title": _title(bench, runs),
                "columns": columns,
                "rows": rows,
                "delta": _delta(rows, keys),
                "reference": _references("4", bench),
                "reference_absent": paper.absent("4", bench),
            }
        if per_bench:
            out[mode] = per_bench
    return out


def _title(bench: str, runs: list[dict[str, Found]]) -> str:
    for run in runs:
        if bench in run:
            return str(run[bench][1].get("title", bench))
    return bench


# --------------------------------------------------------------------------- Table 5


def _passed(bench: str, row: dict[str, Any]) -> bool:
    if bench == "bfcl":
        return bool(row.get("valid"))
    # τ²'s own rule (tau2.metrics.agent_metrics.is_successful): a reward of 1, to 1e-6
    return abs(float(row.get("reward", 0.0)) - 1.0) <= 1e-6


_CASE_KEY = {"bfcl": "case_id", "tau2": "key"}
_CALLS = {"bfcl": "gt_calls", "tau2": "gt_actions"}


def table5_buckets(bench: str, journal: Path) -> dict[str, Any]:
    """Share passed per complexity bucket over the case rows of one mode's ``journal``:
    ``{"values": {bucket: share or None}, "counts": {bucket: cases}, "unrecorded": n}``
    (``unrecorded``: rows written before runs recorded their ground-truth count)."""
    rows = {str(r.get(_CASE_KEY[bench])): r for r in read_rows(journal)}
    counts = {b.key: [0, 0] for b in paper.TABLE5_BUCKETS}
    unrecorded = 0
    for row in rows.values():
        calls = row.get(_CALLS[bench])
        if not isinstance(calls, int):
            unrecorded += 1
            continue
        tally = counts[paper.bucket_of(calls)]
        tally[0] += _passed(bench, row)
        tally[1] += 1
    return {
        "values": {b: (c[0] / c[1] if c[1] else None) for b, c in counts.items()},
        "counts": {b: c[1] for b, c in counts.items()},
        "unrecorded": unrecorded,
    }


def _table5(names: list[str], runs: list[dict[str, Found]]) -> dict[str, Any]:
    """``{mode: {benchmark: {title, axis, columns, rows, delta, reference, reference_absent}}}``."""
    benches = [b for b in paper.TABLE5_AXES if any(b in r for r in runs)]
    modes = _ordered({m for r in runs for b in benches if b in r for m in r[b][1].get("modes", {})})
    keys = [b.key for b in paper.TABLE5_BUCKETS]
    out: dict[str, Any] = {}
    for mode in modes:
        per_bench: dict[str, Any] = {}
        for bench in benches:
            rows: list[dict[str, Any]] = []
            for name, run in zip(names, runs, strict=True):
                found = run.get(bench)
                if found and mode in found[1].get("modes", {}):
                    buckets = table5_buckets(bench, found[0] / f"{mode}.jsonl")
                else:
                    buckets = {
                        "values": dict.fromkeys(keys),
                        "counts": dict.fromkeys(keys, 0),
                        "unrecorded": 0,
                    }
                rows.append(
                    {"run": name, "model": found[1].get("model") if found else None, **buckets}
                )
            if all(not any(r["counts"].values()) and not r["unrecorded"] for r in rows):
                continue
            per_bench[bench] = {
                "title": _title(bench, runs),
                "axis": paper.TABLE5_AXES[bench],
                "columns": [{"key": b.key, "label": b.label} for b in paper.TABLE5_BUCKETS],
                "rows": rows,
                "delta": _delta(rows, keys),
                "reference": _references("5", bench),
                "reference_absent": paper.absent("5", bench),
            }
        if per_bench:
            out[mode] = per_bench
    return out


# --------------------------------------------------------------------------- rendering


def pct(value: float | None) -> str:
    """A share as percent with two decimals; "-" when absent."""
    return "-" if value is None else f"{100 * value:.2f}"


def points(value: float | None) -> str:
    """A delta in percentage points, signed; "-" when absent."""
    return "-" if value is None else f"{100 * value:+.2f}"


def _run_label(row: dict[str, Any]) -> str:
    return f"{row['run']}: {row['model']}" if row.get("model") else str(row["run"])


def _bucket_cell(row: dict[str, Any], key: str) -> str:
    n = row["counts"].get(key) or 0
    return f"{pct(row['values'].get(key))} ({n})" if n else "-"


def _notes(section: dict[str, Any], table: str) -> list[str]:
    by_source: dict[str, list[str]] = {}
    for ref in section["reference"]:
        by_source.setdefault(ref["source"], []).append(ref["label"])
    notes = [f"{', '.join(labels)}: {source}." for source, labels in by_source.items()]
    if section["reference_absent"]:
        why = section["reference_absent"]
        notes.append(f"{section['title']}, the paper's Table {table} reference rows: {why}.")
    for row in section["rows"]:
        if row.get("unrecorded"):
            notes.append(
                f"{row['run']}: {row['unrecorded']} case rows carry no ground-truth count "
                "(written before runs recorded it), left out of the buckets."
            )
    return notes


def _rich_layout(
    title: str, sec: dict[str, Any], cell: Callable[[dict[str, Any], str], str]
) -> Any:
    """One layout section as a rich table: the runs, the delta, the paper's rows."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(title))
    table.add_column("run / reference", overflow="fold")
    for col in sec["columns"]:
        table.add_column(escape(col["label"]), justify="right", overflow="fold")
    keys = [c["key"] for c in sec["columns"]]
    for row in sec["rows"]:
        table.add_row(escape(_run_label(row)), *(cell(row, k) for k in keys))
    table.add_row("delta (last - first)", *(points(sec["delta"][k]) for k in keys), style="bold")
    for ref in sec["reference"]:
        table.add_row(escape(ref["label"]), *(pct(ref["values"].get(k)) for k in keys), style="dim")
    return table


def terminal_tables(result: dict[str, Any]) -> list[Any]:
    """The comparison as rich renderables: Table 4 and Table 5 layouts per benchmark and
    mode, then the scores of benchmarks outside the paper's tables."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    out: list[Any] = []
    for mode, benches in result["table4"].items():
        for bench, sec in benches.items():
            title = f"Table 4 layout: {sec['title']} ({bench} [{mode}])"
            out.append(_rich_layout(title, sec, lambda row, key: pct(row["values"][key])))
            out += [Text(n, style="dim") for n in _notes(sec, "4")]
    for mode, benches in result["table5"].items():
        for bench, sec in benches.items():
            title = f"Table 5 layout: {sec['title']} by {sec['axis']} ({bench} [{mode}])"
            out.append(_rich_layout(title, sec, _bucket_cell))
            out.append(Text("cells: % passed (cases in the bucket)", style="dim"))
            out += [Text(n, style="dim") for n in _notes(sec, "5")]
    shown = result_benches(result)
    for bench, data in result["benchmarks"].items():
        if bench in shown:
            continue
        for mode, metrics in data["modes"].items():
            table = Table(title=escape(f"{bench} [{mode}]"))
            table.add_column("metric", overflow="fold")
            for name, model in zip(result["runs"], data["models"], strict=True):
                table.add_column(escape(f"{name}\n{model}"), justify="right", overflow="fold")
            table.add_column("delta", justify="right")
            for metric, row in metrics.items():
                table.add_row(escape(metric), *(pct(v) for v in row["runs"]), points(row["delta"]))
            out.append(table)
    return out


def result_benches(result: dict[str, Any]) -> set[str]:
    """The benchmarks the Table 4 layout shows (the rest get the plain score tables)."""
    return {b for benches in result["table4"].values() for b in benches}


def render_html(result: dict[str, Any]) -> str:
    """The comparison as one HTML page (the run report's style): per mode, the Table 4
    layout (benchmarks side by side) and the Table 5 layout, then the other benchmarks."""
    runs = " vs. ".join(result["runs"])
    sections = [
        f"<h1>awm bench compare: {esc(runs)}</h1>",
        f"<p class='note'>Laid out as Tables 4 and 5 of {esc(result['paper'])}; "
        "shaded rows are the paper's, delta is the last run minus the first (points).</p>",
    ]
    for mode, benches in result["table4"].items():
        sections.append(f"<h2>Table 4 layout [{esc(mode)}]</h2>")
        sections.append(_wide_html(benches, "4", lambda row, key: pct(row["values"][key])))
    for mode, benches in result["table5"].items():
        sections.append(f"<h2>Table 5 layout [{esc(mode)}]: % passed by complexity</h2>")
        sections.append(_wide_html(benches, "5", _bucket_cell))
        axes = "; ".join(f"{sec['title']}: {sec['axis']}" for sec in benches.values())
        sections.append(f"<p class='note'>Buckets by {esc(axes)}; cells: % passed (cases).</p>")
    shown = result_benches(result)
    for bench, data in result["benchmarks"].items():
        if bench in shown:
            continue
        for mode, metrics in data["modes"].items():
            headers = [
                "Metric",
                *(f"{n}: {m}" for n, m in zip(result["runs"], data["models"], strict=True)),
                "Delta",
            ]
            rows = [
                [m, *(pct(v) for v in r["runs"]), points(r["delta"])] for m, r in metrics.items()
            ]
            sections.append(f"<h2>{esc(bench)} [{esc(mode)}]</h2>" + html_table(headers, rows))
    return html_page(f"awm bench compare {runs}", sections)


def _wide_html(
    benches: dict[str, Any], table: str, cell: Callable[[dict[str, Any], str], str]
) -> str:
    """One table with the benchmarks side by side under grouped headers."""
    secs = list(benches.values())
    top = (
        "<tr><th></th>"
        + "".join(f"<th colspan='{len(s['columns'])}'>{esc(s['title'])}</th>" for s in secs)
        + "</tr>"
    )
    sub = (
        "<tr><th>Run / reference</th>"
        + "".join(f"<th>{esc(c['label'])}</th>" for s in secs for c in s["columns"])
        + "</tr>"
    )
    rows: list[list[str]] = []
    classes: list[str] = []
    for i in range(len(secs[0]["rows"])):
        # a run's label names its model (from the first benchmark the run has)
        named = [s["rows"][i] for s in secs if s["rows"][i].get("model")] or [secs[0]["rows"][i]]
        cells = [cell(s["rows"][i], c["key"]) for s in secs for c in s["columns"]]
        rows.append([_run_label(named[0]), *cells])
        classes.append("")
    rows.append(
        [
            "delta (last - first)",
            *(points(s["delta"][c["key"]]) for s in secs for c in s["columns"]),
        ]
    )
    classes.append("delta")
    labels = list(dict.fromkeys(ref["label"] for s in secs for ref in s["reference"]))
    for label in labels:
        cells = []
        for s in secs:
            ref = next((r for r in s["reference"] if r["label"] == label), None)
            cells += [
                pct(ref["values"].get(c["key"])) if ref and c["key"] in ref["values"] else ""
                for c in s["columns"]
            ]
        rows.append([label, *cells])
        classes.append("ref")
    notes = [n for s in secs for n in _notes(s, table)]
    return html_table([], rows, classes=classes, head_html=top + sub) + "".join(
        f"<p class='note'>{esc(n)}</p>" for n in dict.fromkeys(notes)
    )
