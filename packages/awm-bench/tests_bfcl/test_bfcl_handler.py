"""``awm bench run bfcl --handler NAME``: native mode through bfcl-eval's own model handlers.

The leaderboard's Qwen3 rows run :class:`QwenFCHandler` (``Qwen/Qwen3-8B-FC``) and
:class:`QwenHandler` (``Qwen/Qwen3-8B``, prompt mode); both send the raw prompt, the
chat template applied by the handler, to ``/v1/completions``. The oracle answers them
in the handler's own output format and scores 100%; a model behind an OpenAI-compatible
completions endpoint receives exactly the prompt bfcl-eval builds.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.bfcl.cases import CATEGORIES, BfclCase
from awm_bench.bfcl.data import load_cases, tool_schemas
from awm_bench.bfcl.episode import BfclSession
from awm_bench.bfcl.handlers import (
    DEFAULT_HANDLER,
    HandlerSetupError,
    UnknownHandlerError,
    resolve_handler,
    supported_handlers,
)
from awm_bench.bfcl.native import OracleBackend, serve_app
from awm_bench.bfcl.run import DEFAULT_LIMIT, run_bfcl
from awm_core.contracts import BenchmarkConfig
from awm_core.llm.http_server import BackgroundServer
from awm_core.llm.sampling import Sampling
from awm_core.llm.scripted import ScriptedBackend

QWEN_FC = "Qwen/Qwen3-8B-FC"
QWEN_PROMPT = "Qwen/Qwen3-8B"


@pytest.fixture(scope="module")
def subset() -> list[BfclCase]:
    return load_cases(CATEGORIES, per_category=DEFAULT_LIMIT)


# ---------------------------------------------------------------- naming a handler
def test_a_leaderboard_model_name_picks_its_handler_and_flags() -> None:
    fc, prompt = resolve_handler(QWEN_FC), resolve_handler(QWEN_PROMPT)
    assert (fc.class_name, fc.kind, fc.is_fc_model) == ("QwenFCHandler", "completions", True)
    assert (prompt.class_name, prompt.kind, prompt.is_fc_model) == (
        "QwenHandler",
        "completions",
        False,
    )
    assert fc.bfcl_model == QWEN_FC and fc.label == f"QwenFCHandler ({QWEN_FC})"
    # scored under a name bfcl-eval can look up ("_" and "/" are its separators)
    assert "/" not in fc.score_model and "_" not in fc.score_model


def test_a_handler_class_runs_as_a_leaderboard_model_that_uses_it() -> None:
    spec = resolve_handler("QwenFCHandler")
    assert spec.class_name == "QwenFCHandler"
    assert spec.bfcl_model is not None and spec.bfcl_model.startswith("Qwen/")
    assert resolve_handler(None).class_name == resolve_handler(DEFAULT_HANDLER).class_name


def test_an_unknown_handler_is_a_clear_error_listing_valid_ones() -> None:
    with pytest.raises(UnknownHandlerError) as err:
        resolve_handler("Qwen/Qwen3-8B-FCC")
    text = str(err.value)
    assert "did you mean" in text and QWEN_FC in text
    assert "QwenFCHandler" in text and "QwenHandler" in text


@pytest.mark.parametrize(
    ("name", "why"),
    [("qwen3-8b-FC", "streams"), ("claude-sonnet-4-20250514-FC", "OpenAI-compatible")],
)
def test_a_handler_that_cannot_reach_awms_endpoint_is_refused(name: str, why: str) -> None:
    with pytest.raises(UnknownHandlerError, match=why):
        resolve_handler(name)


def test_the_supported_handlers_include_the_qwen_ones() -> None:
    assert {"QwenFCHandler", "QwenHandler", DEFAULT_HANDLER} <= set(supported_handlers())
    assert "QwenAPIHandler" not in supported_handlers()


def test_a_raw_prompt_handler_with_a_chat_only_backend_is_refused_before_running(
    tmp_path: Path, subset: list[BfclCase]
) -> None:
    config = BenchmarkConfig(out=tmp_path, model="local:smollm2", handler=QWEN_FC)
    with pytest.raises(HandlerSetupError, match="completions"):
        run_bfcl(config, subset[:1])
    assert not (tmp_path / "awm.jsonl").exists()  # refused before awm mode ran


# ---------------------------------------------------------------- the oracle through them
@pytest.mark.parametrize("handler", [QWEN_FC, QWEN_PROMPT])
def test_the_oracle_scores_100_percent_through_the_qwen_handlers(
    tmp_path: Path, subset: list[BfclCase], handler: str
) -> None:
    summary = run_bfcl(BenchmarkConfig(out=tmp_path, modes=("native",), handler=handler), subset)
    rows = [json.loads(line) for line in (tmp_path / "native.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in rows if not r["valid"]] == []
    assert summary["modes"]["native"]["correct"] == len(subset)
    assert summary["handler"]["class"] == resolve_handler(handler).class_name
    assert {r["handler"] for r in rows} == {resolve_handler(handler).label}


@pytest.mark.parametrize("handler", [QWEN_FC, QWEN_PROMPT])
def test_a_corrupted_oracle_fails_through_the_qwen_handlers(
    tmp_path: Path, subset: list[BfclCase], handler: str
) -> None:
    config = BenchmarkConfig(
        out=tmp_path, modes=("native",), handler=handler, corruption="rename_tool"
    )
    result = run_bfcl(config, subset)["modes"]["native"]
    assert 0 < result["correct"] < result["cases"]


def test_the_prompt_handler_answers_in_bfcls_prompt_format(subset: list[BfclCase]) -> None:
    """QwenHandler reads ``[f(a=1)]``; QwenFCHandler reads ``<tool_call>`` JSON."""
    case = next(c for c in subset if c.category == "simple")
    for handler, marker in ((QWEN_PROMPT, "["), (QWEN_FC, "<tool_call>")):
        oracle = OracleBackend(spec=resolve_handler(handler))
        oracle.start(case)
        text = oracle.answer().content
        assert text.startswith(marker), (handler, text)


def test_the_cli_runs_a_handler_and_the_summary_and_report_name_it(tmp_path: Path) -> None:
    from awm_core.cli import build_cli

    args = ["bench", "run", "bfcl", "--handler", QWEN_FC, "--mode", "native", "--only", "simple"]
    args += ["--limit", "1", "--results", str(tmp_path), "--run", "r", "--json"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{") :])["bfcl"]
    assert summary["handler"]["bfcl_model"] == QWEN_FC
    assert summary["modes"]["native"]["handler"] == f"QwenFCHandler ({QWEN_FC})"
    assert summary["modes"]["native"]["correct"] == 1
    assert "QwenFCHandler" in (tmp_path / "r" / "report.html").read_text()
    # resuming the run with another handler would mix two handlers' results
    again = CliRunner().invoke(build_cli(), [*args[:4], QWEN_PROMPT, *args[5:]])
    assert again.exit_code != 0
    assert "another --run" in str(again.exception or again.output)


def test_an_unknown_handler_fails_the_cli_with_the_list(tmp_path: Path) -> None:
    from awm_core.cli import build_cli

    args = ["bench", "run", "bfcl", "--handler", "NoSuchHandler", "--results", str(tmp_path)]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code != 0
    assert "QwenFCHandler" in result.output + str(result.exception)


# ---------------------------------------------------------------- a model behind /v1/completions
def _tiny_tokenizer(folder: Path) -> Any:
    """A word-level tokenizer with a 4096-token context, saved as a model folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]")
    tokenizer.save_pretrained(folder)
    config = {"model_type": "llama", "max_position_embeddings": 4096}
    (folder / "config.json").write_text(json.dumps(config))
    return tokenizer


@pytest.mark.parametrize("handler", [QWEN_FC, QWEN_PROMPT])
def test_a_model_receives_bfcl_evals_own_prompt_at_its_completions_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subset: list[BfclCase], handler: str
) -> None:
    case = next(c for c in subset if c.category == "simple")
    spec = resolve_handler(handler)
    tokenizer = _tiny_tokenizer(tmp_path / "tokenizer")
    monkeypatch.setenv("AWM_BFCL_TOKENIZER", str(tmp_path / "tokenizer"))
    oracle = OracleBackend(spec=spec)
    oracle.start(case)
    bodies: list[dict[str, Any]] = []

    async def model(body: dict[str, Any]) -> dict[str, Any]:
        bodies.append(body)
        return await oracle.complete(body)

    app = serve_app(ScriptedBackend([]), model_name="qwen", complete=model)
    config = BenchmarkConfig(
        out=tmp_path / "run",
        model="openai:qwen",
        modes=("native",),
        handler=handler,
        sampling=Sampling(temperature=0.25, seed=7),
    )
    with BackgroundServer(app) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        summary = run_bfcl(config, [case])
        assert summary["modes"]["native"]["correct"] == 1
        assert len(bodies) == 1
        # a resumed run reads the answer from the cache instead of asking again
        (tmp_path / "run" / "native.jsonl").write_text("")
        assert run_bfcl(config, [case])["modes"]["native"]["correct"] == 1
        assert len(bodies) == 1

    body = bodies[0]
    entry = copy.deepcopy(case.entry)
    bfcl_handler = spec.build("x", 0.0)
    data = bfcl_handler._pre_query_processing_prompting(entry)
    prompt = bfcl_handler._format_prompt(entry["question"][0], data["function"])
    assert body["prompt"] == prompt
    assert body["model"] == "qwen"
    assert (body["temperature"], body["seed"]) == (0.25, 7)  # the run's sampling
    assert body["max_tokens"] == min(4096, 4096 - len(tokenizer.tokenize(prompt)) - 2)

    # awm mode lists the very functions this prompt shows, converted to JSON Schema
    shown = _prompt_functions(prompt, fc=spec.is_fc_model)
    assert [f["name"] for f in shown] == [f["name"] for f in case.functions]
    listed = BfclSession(case)
    import asyncio

    specs = asyncio.run(listed.list_tools())
    converted = tool_schemas(case, [{**f, "description": _bare(f["description"])} for f in shown])
    assert [(s.description, s.input_schema) for s in specs] == [
        (t["description"], {**t["parameters"], "type": "object"}) for t in converted
    ]


NOTE = " Note that the provided function is in Python 3 syntax."


def _bare(description: str) -> str:
    """A description as in the case file (bfcl's language note appended once more by
    :func:`tool_schemas`)."""
    return description[: -len(NOTE)] if description.endswith(NOTE) else description


def _prompt_functions(prompt: str, *, fc: bool) -> list[dict[str, Any]]:
    """The function docs a Qwen prompt shows: JSON lines in ``<tools>`` (FC), or the list
    in bfcl's system prompt (prompt mode)."""
    if fc:
        block = prompt[prompt.index("<tools>\n") + 8 : prompt.index("\n</tools>")]
        return [json.loads(line) for line in block.splitlines()]
    import ast

    lead = "Here is a list of functions in JSON format that you can invoke.\n"
    start = prompt.index(lead) + len(lead)
    docs: list[dict[str, Any]] = ast.literal_eval(prompt[start : prompt.index("\n\n<|im_end|>")])
    return docs
