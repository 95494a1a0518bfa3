"""BFCLv3 through bfcl-eval 2025.8.6.2 itself (``nox -s bench``): the oracle scores 100% in
both modes, a corrupted oracle does not, and the numbers are the ones bfcl-eval computes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.bfcl.cases import (
    ADDITIONAL_FUNCTION_PROMPT,
    CATEGORIES,
    ORACLE_UNREACHABLE,
    BfclCase,
    CategoryScore,
    oracle_calls,
    overall,
    param_order,
)
from awm_bench.bfcl.data import load_cases
from awm_bench.bfcl.run import DEFAULT_LIMIT, run_bfcl
from awm_bench.bfcl.scoring import score_case, upstream_overall
from awm_core.contracts import BenchmarkConfig
from awm_core.llm.base import ChatResponse
from awm_core.llm.http_server import BackgroundServer
from awm_core.llm.scripted import ScriptedBackend
from awm_core.llm.serve import build_backend_app
from awm_core.models import Message


@pytest.fixture(scope="module")
def subset() -> list[BfclCase]:
    """The default offline subset: DEFAULT_LIMIT cases of each of the 17 v3 categories."""
    return load_cases(CATEGORIES, per_category=DEFAULT_LIMIT)


def _run(tmp_path: Path, cases: list[BfclCase], mode: str, **kw: Any) -> dict[str, Any]:
    summary = run_bfcl(BenchmarkConfig(out=tmp_path / mode, modes=(mode,), **kw), cases)
    result: dict[str, Any] = summary["modes"][mode]
    return result


def test_the_subset_covers_every_v3_category(subset: list[BfclCase]) -> None:
    assert {c.category for c in subset} == set(CATEGORIES)
    assert len(subset) == DEFAULT_LIMIT * len(CATEGORIES)


@pytest.mark.parametrize("mode", ["awm", "native"])
def test_the_oracle_scores_100_percent(tmp_path: Path, subset: list[BfclCase], mode: str) -> None:
    result = _run(tmp_path, subset, mode)
    failed = [
        json.loads(line)
        for line in (tmp_path / mode / f"{mode}.jsonl").read_text().splitlines()
        if not json.loads(line)["valid"]
    ]
    assert failed == []
    assert result["correct"] == result["cases"] == len(subset)
    assert result["groups"]["overall"] == pytest.approx(1.0)


@pytest.mark.parametrize("mode", ["awm", "native"])
@pytest.mark.parametrize("corruption", ["drop_argument", "rename_tool"])
def test_a_corrupted_oracle_scores_below_100_percent(
    tmp_path: Path, subset: list[BfclCase], mode: str, corruption: str
) -> None:
    result = _run(tmp_path, subset, mode, corruption=corruption)
    assert result["correct"] < result["cases"]
    if corruption == "rename_tool":
        # a wrong function name fails every case that needs a call, except relevance
        # (where any call passes); dropping an argument may hit an optional one
        unaffected = [
            c for c in subset if not any(oracle_calls(c)) or c.category == "live_relevance"
        ]
        assert result["correct"] == len(unaffected)


def test_the_oracle_fails_exactly_on_the_documented_unreachable_cases() -> None:
    cases = load_cases(CATEGORIES, ids=list(ORACLE_UNREACHABLE))
    assert sorted(c.id for c in cases) == sorted(ORACLE_UNREACHABLE)
    for case in cases:
        calls = oracle_calls(case)[0]
        output = [{n: json.dumps(a)} for n, a in calls]
        assert not score_case(case, output, mode="episode").valid, case.id


def test_awms_v3_overall_is_bfcl_evals_leaderboard_aggregation() -> None:
    scores = {c: CategoryScore((7 * i) % 11, 11 + i) for i, c in enumerate(CATEGORIES)}
    ours, theirs = overall(scores), upstream_overall(scores)
    for group in ("overall", "non_live", "live", "multi_turn"):
        assert ours[group] == pytest.approx(theirs[group], abs=6e-5), group  # bfcl rounds to 0.01%


def test_the_held_out_function_prompt_is_bfcl_evals() -> None:
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    assert ADDITIONAL_FUNCTION_PROMPT == DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC


def test_positional_ground_truth_arguments_are_named_from_the_tool_classes_signatures() -> None:
    # GorillaFileSystem.sort(file_name); TravelAPI.purchase_insurance's doc lists its
    # parameters in another order than the method, so the doc order would misname them
    case = load_cases(["multi_turn_base"], per_category=None)
    signatures = {k: v for c in case for k, v in c.signatures.items()}
    assert signatures["sort"] == ["file_name"]
    doc = next(
        f for c in case for f in c.functions_at(len(c.turns)) if f["name"] == "purchase_insurance"
    )
    assert param_order([doc])["purchase_insurance"] != signatures["purchase_insurance"]


def test_convert_writes_case_folders_with_awm_tools_and_oracle_tasks(tmp_path: Path) -> None:
    from awm_core.models import Task, ToolSpec
    from awm_core.registry import get_benchmark

    folders = get_benchmark("bfcl").convert(tmp_path, limit=1)
    assert len(folders) == len(CATEGORIES)
    for folder in folders:
        for turn in json.loads((folder / "tools.json").read_text()):
            [ToolSpec.model_validate(t) for t in turn]
        [Task.model_validate(t) for t in json.loads((folder / "tasks.json").read_text())]


def _refuser(messages: list[Message]) -> ChatResponse:
    return ChatResponse(content="I cannot help with that.")


def test_a_model_behind_awms_openai_server_runs_natively_and_resumes_from_its_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awm_core.cli import build_cli

    awm = build_cli()
    backend = ScriptedBackend([_refuser] * 1000, name="scripted")
    with BackgroundServer(build_backend_app(backend, model_name="refuser")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "EMPTY")
        args = ["bench", "run", "bfcl", "--model", "openai:refuser", "--limit", "1"]
        args += ["--results", str(tmp_path), "--run", "r1", "--json"]
        first = CliRunner().invoke(awm, args)
        assert first.exit_code == 0, first.output
        asked = len(backend.calls)
        assert asked > 0
        # kill the run after its last case: that case is redone from the cache, unasked
        for mode in ("awm", "native"):
            path = tmp_path / "r1" / "bfcl" / "openai-refuser" / f"{mode}.jsonl"
            lines = path.read_text().splitlines()
            path.write_text("\n".join(lines[:-1]) + "\n")
        second = CliRunner().invoke(awm, args)
        assert second.exit_code == 0, second.output
        assert len(backend.calls) == asked
    summary = json.loads(second.output[second.output.index("{") :])["bfcl"]
    for mode in ("awm", "native"):
        data = summary["modes"][mode]
        assert data["cases"] == len(CATEGORIES)
        # a model that never calls a tool passes exactly the irrelevance categories
        assert 0 < data["correct"] < data["cases"]
        assert data["categories"]["irrelevance"]["accuracy"] == 1.0
    assert (tmp_path / "r1" / "report.html").is_file()
    assert os.environ["OPENAI_BASE_URL"] == server.base_url
