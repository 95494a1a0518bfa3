"""``awm bench compare BASE TRAINED``: the paper's Table 4 and Table 5 layouts.

The runs are written by the benchmarks' own writers (``run_bfcl``, ``run_tau2`` and
MCP-Universe's ``mode_summary``) with only the model's turn replaced: each case's
episode returns a fixed verdict, so the journals and summaries are the ones a real run
leaves (ground-truth call counts included) and the expected numbers are known.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench import paper
from awm_bench.bfcl.cases import CATEGORIES, BfclCase, required_calls
from awm_bench.bfcl.scoring import CaseScore
from awm_bench.compare import compare_runs, table4_values
from awm_bench.report import build_report
from awm_bench.suite_cli import model_slug
from awm_core.cli import build_cli
from awm_core.contracts import BenchmarkConfig

# ground-truth calls per BFCL category (1 when not listed), chosen to fill every bucket
BFCL_CALLS = {
    "irrelevance": 0,
    "live_irrelevance": 0,
    "live_parallel": 2,
    "parallel": 3,
    "parallel_multiple": 4,
    "live_parallel_multiple": 5,
    "multi_turn_miss_func": 6,
    "multi_turn_base": 7,
    "multi_turn_miss_param": 11,
    "multi_turn_long_context": 12,
}
BASE_PASSES = {"simple", "java", "parallel", "irrelevance", "live_irrelevance"}
TRAINED_PASSES = BASE_PASSES | {
    "multiple",
    "live_simple",
    "live_relevance",
    "live_parallel",
    "parallel_multiple",
    "multi_turn_base",
    "multi_turn_miss_param",
}
# τ² tasks per domain: (ground-truth actions, passes for base, passes for trained)
TAU2_TASKS = {
    "airline": [(1, True, True), (4, False, True)],
    "retail": [(0, True, True), (7, False, False)],
    "telecom": [(12, False, False), (2, False, True)],
}


def _bfcl_case(category: str) -> BfclCase:
    n = BFCL_CALLS.get(category, 1)
    user = [{"role": "user", "content": "do it"}]
    doc = {"name": "f", "parameters": {"type": "dict", "properties": {}}}
    if category.startswith("multi_turn"):  # call strings per turn: two turns
        truth: list[Any] = [["f()"] * (n - n // 2), ["f()"] * (n // 2)]
        return BfclCase(f"{category}_0", [user, user], [doc], truth)
    truth = [] if "relevance" in category else [{"f": {}}] * n
    return BfclCase(f"{category}_0", [user], [doc], truth)


def _bfcl_run(
    results: Path, run: str, model: str, passes: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A BFCLv3 awm-mode run of one case per category through ``run_bfcl``."""
    from awm_bench.bfcl import episode
    from awm_bench.bfcl.run import run_bfcl

    async def verdict(case: BfclCase, policy_for: Any, **_: Any) -> Any:
        score = CaseScore(case.id, case.category, case.category in passes)
        return SimpleNamespace(score=score, trajectories=[], output=[])

    monkeypatch.setattr(episode, "run_case", verdict)
    try:  # native mode's bfcl-eval handler: not needed by an awm-mode run
        from awm_bench.bfcl import handlers
    except ImportError:
        pass
    else:
        monkeypatch.setattr(handlers, "resolve_handler", lambda name: SimpleNamespace(label="-"))
    out = results / run / "bfcl" / model_slug(model)
    run_bfcl(
        BenchmarkConfig(out=out, model=model, modes=("awm",)), [_bfcl_case(c) for c in CATEGORIES]
    )


class _Action:
    def __init__(self, n: int) -> None:
        self.n = n

    def model_dump(self) -> dict[str, Any]:
        return {"name": f"tool_{self.n}", "arguments": {}, "requestor": "assistant"}


def _tau2_run(
    results: Path, run: str, model: str, trained: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A τ² awm-mode run through ``run_tau2``; τ²'s scoring helpers are awm's copies."""
    import awm_bench.tau2.run as tau2_run
    from awm_bench.tau2.cases import pass_hat_k

    tasks: list[tuple[str, Any]] = []
    verdicts: dict[int, bool] = {}
    for domain, specs in TAU2_TASKS.items():
        for i, (actions, base, after) in enumerate(specs):
            criteria = SimpleNamespace(
                actions=[_Action(k) for k in range(actions)], communicate_info=[]
            )
            task = SimpleNamespace(id=str(i), evaluation_criteria=criteria)
            verdicts[id(task)] = after if trained else base
            tasks.append((domain, task))

    def episode(config: Any, domain: str, task: Any, *rest: Any) -> tuple[float, dict[str, Any]]:
        return (1.0 if verdicts[id(task)] else 0.0), {"termination": "agent_stop"}

    helpers = {"pass_hat_k": pass_hat_k, "is_successful": lambda r: abs(r - 1.0) <= 1e-6}
    monkeypatch.setattr(tau2_run, "_awm", episode)
    monkeypatch.setattr(tau2_run, "attr", lambda module, name: helpers[name])
    out = results / run / "tau2" / model_slug(model)
    config = BenchmarkConfig(
        out=out, model=model, modes=("awm",), user_model="openai:user", max_steps=200
    )
    tau2_run.run_tau2(config, tasks)


def _mcpu_run(results: Path, run: str, model: str, success: dict[str, bool]) -> None:
    """An MCP-Universe summary as ``run_mcpu`` writes it (its ``mode_summary``)."""
    from awm_bench.mcpu.run import mode_summary

    rows = [
        {"key": d, "domain": d, "success": ok, "evaluator_score": float(ok)}
        for d, ok in success.items()
    ]
    out = results / run / "mcpuniverse" / model_slug(model)
    out.mkdir(parents=True)
    summary = {
        "benchmark": "mcpuniverse",
        "title": "MCP-Universe",
        "model": model,
        "modes": {"awm": mode_summary(rows, 1.0)},
    }
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``base`` and ``trained`` run folders holding BFCLv3, τ²-bench and MCP-Universe."""
    monkeypatch.setenv("AWM_OPENAI_API_KEY", "test")  # the backends are made, never asked
    _bfcl_run(tmp_path, "base", "openai:base", BASE_PASSES, monkeypatch)
    _bfcl_run(tmp_path, "trained", "openai:trained", TRAINED_PASSES, monkeypatch)
    _tau2_run(tmp_path, "base", "openai:base", False, monkeypatch)
    _tau2_run(tmp_path, "trained", "openai:trained", True, monkeypatch)
    domains = ("location_navigation", "financial_analysis", "calculator")
    _mcpu_run(tmp_path, "base", "openai:base", dict.fromkeys(domains, False))
    _mcpu_run(tmp_path, "trained", "openai:trained", {d: d != "calculator" for d in domains})
    return tmp_path / "base", tmp_path / "trained"


def _summary(run: Path, bench: str) -> dict[str, Any]:
    (path,) = run.glob(f"{bench}/*/summary.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_every_case_row_records_its_ground_truth_count(runs: tuple[Path, Path]) -> None:
    base, _ = runs
    bfcl = [json.loads(x) for x in (base / "bfcl/openai-base/awm.jsonl").read_text().splitlines()]
    assert {r["case_id"]: r["gt_calls"] for r in bfcl} == {
        f"{c}_0": BFCL_CALLS.get(c, 1) for c in CATEGORIES
    }
    tau2 = [json.loads(x) for x in (base / "tau2/openai-base/awm.jsonl").read_text().splitlines()]
    expected = {f"{d}/{i}#0": s[0] for d, specs in TAU2_TASKS.items() for i, s in enumerate(specs)}
    assert {r["key"]: r["gt_actions"] for r in tau2} == expected


def test_required_calls_follow_bfcls_ground_truth() -> None:
    for category in CATEGORIES:
        assert required_calls(_bfcl_case(category)) == BFCL_CALLS.get(category, 1), category


def test_table4_has_a_row_per_run_the_delta_and_the_papers_rows(runs: tuple[Path, Path]) -> None:
    base, trained = runs
    result = compare_runs([base, trained])
    bfcl = result["table4"]["awm"]["bfcl"]
    assert [c["key"] for c in bfcl["columns"]] == [c.key for c in paper.TABLE4_COLUMNS["bfcl"]]
    assert [(r["run"], r["model"]) for r in bfcl["rows"]] == [
        ("base", "openai:base"),
        ("trained", "openai:trained"),
    ]
    groups = [_summary(run, "bfcl")["modes"]["awm"]["groups"] for run in runs]
    for key in ("overall", "non_live", "live", "multi_turn"):
        assert [r["values"][key] for r in bfcl["rows"]] == [g[key] for g in groups]
        assert bfcl["delta"][key] == pytest.approx(groups[1][key] - groups[0][key])
    assert [r["values"]["relevance"] for r in bfcl["rows"]] == [0.0, 1.0]
    assert [r["values"]["irrelevance"] for r in bfcl["rows"]] == [1.0, 1.0]
    assert [(ref["label"], ref["values"]) for ref in bfcl["reference"]] == [
        ("Qwen3-8B (paper)", {"overall": pytest.approx(0.5383)}),
        ("Qwen3-8B + AWM (paper)", {"overall": pytest.approx(0.6594)}),
    ]
    assert bfcl["reference_absent"]  # the categories and other rows could not be read

    tau2 = result["table4"]["awm"]["tau2"]
    assert [r["values"] for r in tau2["rows"]] == [
        {"airline": 0.5, "retail": 0.5, "telecom": 0.0, "average": pytest.approx(1 / 3)},
        {"airline": 1.0, "retail": 0.5, "telecom": 0.5, "average": pytest.approx(2 / 3)},
    ]
    assert tau2["delta"]["airline"] == 0.5 and tau2["delta"]["retail"] == 0.0
    assert tau2["reference"] == [] and "absent" in tau2["reference_absent"]

    mcpu = result["table4"]["awm"]["mcpuniverse"]
    keys = [c["key"] for c in mcpu["columns"]]
    assert keys[:4] == [c.key for c in paper.TABLE4_COLUMNS["mcpuniverse"]][:4]
    assert keys[-2:] == ["calculator", "overall"]  # a run's own domain before overall
    assert mcpu["rows"][1]["values"]["location_navigation"] == 1.0
    assert mcpu["rows"][1]["values"]["browser_automation"] is None  # not run
    assert mcpu["delta"]["overall"] == pytest.approx(2 / 3)


def test_table5_buckets_by_ground_truth_calls_and_actions(runs: tuple[Path, Path]) -> None:
    result = compare_runs(list(runs))
    bfcl = result["table5"]["awm"]["bfcl"]
    assert bfcl["axis"] == "required tool calls"
    assert [r["counts"] for r in bfcl["rows"]] == [
        {"none": 2, "easy": 8, "medium": 3, "hard": 2, "very_hard": 2}
    ] * 2
    assert bfcl["rows"][0]["values"] == {
        "none": 1.0,
        "easy": 0.25,
        "medium": pytest.approx(1 / 3),
        "hard": 0.0,
        "very_hard": 0.0,
    }
    assert bfcl["delta"] == {
        "none": 0.0,
        "easy": 0.5,
        "medium": pytest.approx(1 / 3),
        "hard": 0.5,
        "very_hard": 0.5,
    }
    tau2 = result["table5"]["awm"]["tau2"]
    assert tau2["axis"] == "ground-truth actions"
    assert tau2["rows"][0]["counts"] == {
        "none": 1,
        "easy": 2,
        "medium": 1,
        "hard": 1,
        "very_hard": 1,
    }
    assert tau2["rows"][0]["values"]["easy"] == 0.5 and tau2["rows"][1]["values"]["easy"] == 1.0
    assert tau2["delta"]["medium"] == 1.0 and tau2["delta"]["hard"] == 0.0
    # every bucket's passes add up to the summary's own count of passed cases
    for run, row in zip(runs, tau2["rows"], strict=True):
        passed = sum(round(v * row["counts"][b]) for b, v in row["values"].items() if v is not None)
        assert passed == _summary(run, "tau2")["modes"]["awm"]["correct"]
    assert "mcpuniverse" not in result["table5"]["awm"]  # no reference trajectories
    assert bfcl["reference"] == [] and bfcl["reference_absent"]


def test_rows_written_before_counts_were_recorded_are_left_out_and_said(
    runs: tuple[Path, Path],
) -> None:
    base, trained = runs
    journal = base / "bfcl" / "openai-base" / "awm.jsonl"
    rows = [json.loads(x) for x in journal.read_text().splitlines()]
    journal.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "gt_calls"}) + "\n" for r in rows)
    )
    result = compare_runs([base, trained])
    first = result["table5"]["awm"]["bfcl"]["rows"][0]
    assert first["unrecorded"] == len(CATEGORIES) and set(first["values"].values()) == {None}
    assert set(result["table5"]["awm"]["bfcl"]["delta"].values()) == {None}
    output = CliRunner().invoke(build_cli(), ["bench", "compare", str(base), str(trained)]).output
    assert "17 case rows carry no ground-truth count" in output


def test_the_cli_prints_both_layouts_and_writes_the_html_page(runs: tuple[Path, Path]) -> None:
    base, trained = runs
    result = CliRunner().invoke(build_cli(), ["bench", "compare", str(base), str(trained)])
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("Table 4 layout", "bfcl [awm]", "tau2 [awm]", "mcpuniverse [awm]"):
        assert text in out
    assert "Table 5 layout" in out and "required tool calls" in out
    assert "53.83" in out and "65.94" in out  # the paper's rows
    assert "+50.00" in out  # Table 5 delta of the 1-2 call bucket
    assert "absent" in out
    page = (trained / "compare.html").read_text(encoding="utf-8")
    assert f"compare: {trained / 'compare.html'}" in out
    assert "Table 4 layout [awm]" in page and "Table 5 layout [awm]" in page
    assert "colspan" in page and 'class="ref"' in page and 'class="delta"' in page
    assert "Qwen3-8B + AWM (paper)" in page and "65.94" in page
    assert "arXiv:2602.10090" in page


def test_html_goes_where_asked_and_json_keeps_every_table(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    base, trained = runs
    target = tmp_path / "pages" / "cmp.html"
    args = ["bench", "compare", str(base), str(trained), "--html", str(target), "--json"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) >= {"runs", "paper", "table4", "table5", "benchmarks"}
    assert data["benchmarks"]["bfcl"]["modes"]["awm"]["simple"]["delta"] == 0.0
    assert target.exists() and not (trained / "compare.html").exists()


def test_the_run_report_says_where_reference_rows_are_absent(runs: tuple[Path, Path]) -> None:
    base, _ = runs
    build_report(base)
    page = (base / "report.html").read_text(encoding="utf-8")
    assert "Qwen3-8B (paper)" in page and "53.83" in page
    assert page.count("could be read") >= 3  # BFCLv3 partial, τ² and MCP-Universe absent


def _misplaced(refs: tuple[paper.Reference, ...]) -> list[str]:
    """Every way a reference row is keyed to something the layout does not show."""
    bad = []
    for ref in refs:
        where = f"Table {ref.table} {ref.benchmark} {ref.label}"
        if ref.table == "4":
            known = {c.key for c in paper.TABLE4_COLUMNS.get(ref.benchmark, ())}
        elif ref.table == "5" and ref.benchmark in paper.TABLE5_AXES:
            known = {b.key for b in paper.TABLE5_BUCKETS}
        else:
            bad.append(f"{where}: no such table")
            continue
        bad += [f"{where}: column {k!r}" for k in ref.values if k not in known]
        if ref.model not in paper.MODELS or ref.method not in paper.TABLE_METHODS[ref.table]:
            bad.append(f"{where}: not a row of the table")
        bad += [
            f"{where}: {k}={v} is not a percentage"
            for k, v in ref.values.items()
            if not 0 < v <= 100
        ]
        if not ref.source:
            bad.append(f"{where}: no source")
    return bad


def test_every_reference_number_is_keyed_to_a_column_the_layout_shows() -> None:
    assert _misplaced(paper.REFERENCES) == []
    # the check catches a number keyed by the paper's header instead of awm's column key,
    # one filed under the wrong table, and a row the table does not have
    wrong = (
        paper.Reference("4", "bfcl", "Qwen3-8B", "AWM", {"Overall": 65.94}, "p. 7"),
        paper.Reference("5", "mcpuniverse", "Qwen3-8B", "AWM", {"easy": 10.0}, "p. 7"),
        paper.Reference("5", "tau2", "Qwen3-8B", "EnvScaler", {"easy": 10.0}, "p. 7"),
    )
    assert len(_misplaced(wrong)) == 3


def test_every_table4_column_is_a_score_a_complete_run_produces(runs: tuple[Path, Path]) -> None:
    _, trained = runs
    for bench in ("bfcl", "tau2"):
        values = table4_values(bench, _summary(trained, bench)["modes"]["awm"])
        assert {c.key for c in paper.TABLE4_COLUMNS[bench]} <= {
            k for k, v in values.items() if v is not None
        }, bench
    domains = [c.key for c in paper.TABLE4_COLUMNS["mcpuniverse"] if c.key != "overall"]
    from awm_bench.mcpu.run import mode_summary

    rows = [{"domain": d, "success": True, "evaluator_score": 1.0} for d in domains]
    values = table4_values("mcpuniverse", mode_summary(rows, 0.0))
    assert set(values) == {c.key for c in paper.TABLE4_COLUMNS["mcpuniverse"]}


def test_the_paper_rows_keep_the_whole_layout() -> None:
    rows = paper.reference_rows("4", "tau2")
    assert [(r.model, r.method) for r in rows] == [
        (m, k) for m in paper.MODELS for k in paper.METHODS
    ]
    assert all(not r.values for r in rows)
    assert [r.method for r in paper.reference_rows("5", "bfcl")][:2] == ["Base", "AWM"]
    assert {(t, b) for t, b in paper.ABSENT} == {("4", b) for b in paper.TABLE4_COLUMNS} | {
        ("5", b) for b in paper.TABLE5_AXES
    }
    assert [paper.bucket_of(n) for n in (0, 1, 2, 3, 5, 6, 10, 11)] == [
        "none",
        "easy",
        "easy",
        "medium",
        "medium",
        "hard",
        "hard",
        "very_hard",
    ]
