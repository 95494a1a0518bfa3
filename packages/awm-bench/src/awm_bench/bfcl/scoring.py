"""Score BFCLv3 outputs with bfcl-eval's own evaluation runners, one case at a time.

A case's output is what bfcl-eval's handler records (by default its OpenAI
function-calling handler; in native mode ``--handler`` picks another): for a
single-turn case, a list of ``{function: arguments_json}`` (or the text the model
answered instead); for a multi-turn case, one list per turn of those per step.
Each case goes through the runner bfcl-eval's ``eval_runner`` uses for its category
(AST checker, relevance runner, multi-turn state and response checker), with
bfcl-eval's decoding, so awm never decides on its own whether an answer is right.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Mapping
from contextlib import redirect_stdout
from dataclasses import dataclass
from functools import cache
from io import StringIO
from pathlib import Path
from typing import Any

from awm_bench.bfcl.cases import BfclCase, CategoryScore
from awm_bench.bfcl.upstream import (
    EPISODE_MODEL,
    NATIVE_MODEL,
    bfcl,
    forget_instances,
    register_models,
)
from awm_core.paths import process_scratch


@dataclass(frozen=True)
class CaseScore:
    """bfcl-eval's decision on one case; ``error`` is its own error entry when invalid."""

    case_id: str
    category: str
    valid: bool
    error_type: str | None = None
    error: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "category": self.category,
            "valid": self.valid,
            "error_type": self.error_type,
            "error": self.error,
        }


@cache
def _handler(model: str) -> Any:
    """The handler bfcl-eval's evaluation builds for ``model`` (its decoders score)."""
    register_models()
    config = bfcl.attr("bfcl_eval.constants.model_config", "MODEL_CONFIG_MAPPING")[model]
    handler = config.model_handler(model, temperature=0)  # temperature is not used to score
    handler.is_fc_model = config.is_fc_model
    return handler


def score_case(
    case: BfclCase, output: Any, *, mode: str = "episode", model: str | None = None
) -> CaseScore:
    """Score ``output`` for ``case``; ``mode`` picks how tool names are mapped back
    (``native``: bfcl maps OpenAI-safe names; ``episode``: the names are BFCL's already).
    ``model`` (native mode with ``--handler``) is the name in bfcl-eval's model map
    whose handler decodes the output and whose flags the checkers use
    (:attr:`awm_bench.bfcl.handlers.HandlerSpec.score_model`)."""
    if model is None:
        model = NATIVE_MODEL if mode == "native" else EPISODE_MODEL
    handler = _handler(model)
    runner = bfcl.module("bfcl_eval.eval_checker.eval_runner")
    utils = bfcl.module("bfcl_eval.utils")
    category = case.category
    score_dir = process_scratch("awm-bfcl-score-")
    result = [{"id": case.id, "result": copy.deepcopy(output)}]
    prompt = [copy.deepcopy(case.entry)]
    answer = [{"id": case.id, "ground_truth": copy.deepcopy(case.ground_truth)}]
    noise = StringIO()  # the checkers print progress; keep awm's output readable
    try:
        with redirect_stdout(noise):
            if utils.is_relevance_or_irrelevance(category):
                runner.relevance_file_runner(handler, result, prompt, model, category, score_dir)
            elif utils.is_multi_turn(category):
                runner.multi_turn_runner(
                    handler, result, prompt, answer, model, category, score_dir
                )
            else:
                runner.ast_file_runner(
                    handler, result, prompt, answer, case.language, category, model, score_dir
                )
    finally:
        if case.multi_turn:
            forget_instances(model, case.id)
    return _read_score(score_dir / model, case)


def _read_score(folder: Path, case: BfclCase) -> CaseScore:
    version = bfcl.attr("bfcl_eval.constants.category_mapping", "VERSION_PREFIX")
    path = folder / f"{version}_{case.category}_score.json"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    header, failures = lines[0], lines[1:]
    if header["correct_count"] == 1:
        return CaseScore(case.id, case.category, True)
    entry = failures[0] if failures else {}
    error = entry.get("error")
    error_type = entry.get("error_type")
    if isinstance(error, dict):  # multi-turn: the checker's own dict
        error_type = error.get("error_type", error_type)
        error = error.get("error_message", error)
    return CaseScore(case.id, case.category, False, error_type, _short(error))


def _short(error: Any) -> Any:
    text = json.dumps(error, default=str)
    return error if len(text) <= 2000 else text[:2000] + "..."


def category_scores(scores: list[CaseScore]) -> dict[str, CategoryScore]:
    """``{category: CategoryScore}`` over scored cases."""
    out: dict[str, list[int]] = {}
    for s in scores:
        out.setdefault(s.category, [0, 0])
        out[s.category][0] += int(s.valid)
        out[s.category][1] += 1
    return {c: CategoryScore(v[0], v[1]) for c, v in out.items()}


def upstream_overall(scores: Mapping[str, CategoryScore]) -> dict[str, float]:
    """The v3 overall from bfcl-eval's own leaderboard aggregation (its CSV writer),
    for checking :func:`awm_bench.bfcl.cases.overall` against it."""
    register_models()
    helper = bfcl.module("bfcl_eval.eval_checker.eval_runner_helper")
    table = {
        EPISODE_MODEL: {
            c: {"accuracy": s.accuracy, "total_count": s.total} for c, s in scores.items()
        }
    }

    def first_row(out: Path, name: str, column: str) -> float:
        rows = (out / name).read_text(encoding="utf-8").splitlines()
        values = dict(zip(rows[0].split(","), rows[1].split(","), strict=False))
        return float(values[column].rstrip("%")) / 100  # bfcl writes "12.34%"

    with tempfile.TemporaryDirectory(prefix="awm-bfcl-board-") as tmp:
        out = Path(tmp)
        with redirect_stdout(StringIO()):
            helper.generate_leaderboard_csv(table, out)
        return {
            "overall": first_row(out, "data_overall.csv", "Overall Acc"),
            "non_live": first_row(out, "data_non_live.csv", "Non_Live Overall Acc"),
            "live": first_row(out, "data_live.csv", "Live Overall Acc"),
            "multi_turn": first_row(out, "data_multi_turn.csv", "Multi Turn Overall Acc"),
        }
