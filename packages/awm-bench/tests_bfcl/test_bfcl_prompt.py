"""What the model sees in BFCLv3 awm mode, against what bfcl-eval's own handler sends (native).

Fixed cases run in both modes through ``run_bfcl`` with the model at a real local
OpenAI-protocol server (:class:`ScriptedOpenAIServer`) that records every request body
as the model receives it. Natively the server answers as the oracle does (the turn's
calls as tool calls, then text); in awm mode it plays a model that calls list_tools,
then each of the turn's calls, then answers. Both runs must solve their case, so the
requests are the ones a correct model meets. They are compared: what the model is sent
is the same except for :data:`awm_bench.bfcl.episode.AWM_MODE_ADAPTATIONS`, each of
which has a test here and a line in docs/bench.md's BFCLv3 section.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from awm_bench.bfcl.cases import IRRELEVANT_ANSWER, BfclCase, oracle_calls
from awm_bench.bfcl.converter import BfclBenchmark
from awm_bench.bfcl.data import load_cases
from awm_bench.bfcl.episode import AWM_MODE_ADAPTATIONS
from awm_bench.bfcl.native import OracleBackend
from awm_bench.bfcl.run import run_bfcl
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import DEFAULT_SYSTEM_PROMPT, META_TOOLS
from awm_core.history import DEFAULT_WINDOW
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.toolcalls import get_format

# a dotted name (simple, parallel), a case with its own system message (live), a case
# with no call to make, and a multi-turn case with a held-out function and a 4-call turn
CASE_IDS = (
    "simple_1",
    "parallel_0",
    "live_multiple_1-0-1",
    "irrelevance_1",
    "multi_turn_miss_func_0",
)
MULTI = "multi_turn_miss_func_0"
DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"
LIST_TOOLS_CALL = '<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'


class AwmModel:
    """A model in awm's Hermes format: list_tools, each of the turn's calls, then text."""

    def __init__(self, case: BfclCase) -> None:
        self.turns = oracle_calls(case)
        self.names = {bfcl_name: awm for awm, bfcl_name in case.name_map().items()}
        self.turn = -1
        self.step = 0

    def __call__(self, body: dict[str, Any]) -> str:
        if len(body["messages"]) == 2:  # system and user: a new episode, the next turn
            self.turn += 1
            self.step = 0
        calls = self.turns[self.turn]
        step, self.step = self.step, self.step + 1
        if step == 0:
            return LIST_TOOLS_CALL
        if step <= len(calls):
            name, args = calls[step - 1]
            call = {"tool_name": self.names[name], "arguments": args}
            return (
                f"<tool_call>\n{json.dumps({'name': 'call_tool', 'arguments': call})}\n</tool_call>"
            )
        return "Done." if calls else IRRELEVANT_ANSWER


@dataclass
class Captured:
    case: BfclCase
    native: list[dict[str, Any]]
    awm: list[dict[str, Any]]
    valid: dict[str, bool]

    def native_turns(self) -> list[dict[str, Any]]:
        """The first native request of each user turn."""
        return [r for r in self.native if r["messages"][-1]["role"] == "user"]

    def episodes(self) -> list[list[dict[str, Any]]]:
        """The awm requests, one list per episode (user turn)."""
        out: list[list[dict[str, Any]]] = []
        for request in self.awm:
            if len(request["messages"]) == 2:
                out.append([])
            out[-1].append(request)
        return out


def _capture(case: BfclCase, mode: str, out: Path) -> tuple[list[dict[str, Any]], bool]:
    if mode == "native":
        oracle = OracleBackend()
        oracle.start(case)

        def reply(body: dict[str, Any]) -> Any:
            return oracle.answer(body.get("tools"))

    else:
        reply = AwmModel(case)
    config = BenchmarkConfig(
        out=out, model="openai:agent", modes=(mode,), sampling=BfclBenchmark.sampling
    )
    with ScriptedOpenAIServer(reply) as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("OPENAI_API_KEY", "test")
        summary = run_bfcl(config, [case])
        return list(server.requests), summary["modes"][mode]["correct"] == 1


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Captured]:
    root = tmp_path_factory.mktemp("prompt")
    out = {}
    for case_id in CASE_IDS:
        case = load_cases([case_id.rsplit("_", 1)[0]], ids=[case_id])[0]
        native, native_ok = _capture(case, "native", root / case_id / "native")
        awm, awm_ok = _capture(case, "awm", root / case_id / "awm")
        out[case_id] = Captured(case, native, awm, {"native": native_ok, "awm": awm_ok})
    return out


def _listing(episode: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The list_tools result the model reads in an episode's second request."""
    messages = episode[1]["messages"]
    assert messages[-2] == {"role": "assistant", "content": LIST_TOOLS_CALL}
    assert messages[-1]["role"] == "tool"
    listing: list[dict[str, Any]] = json.loads(messages[-1]["content"])
    return listing


def _functions(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["function"] for t in request["tools"]]


# ---------------------------------------------------------------- both captures are real
def test_both_modes_solve_every_fixed_case(captured: dict[str, Captured]) -> None:
    for case_id, run in captured.items():
        assert run.valid == {"native": True, "awm": True}, case_id
        assert len(run.native_turns()) == len(run.episodes()) == len(run.case.turns), case_id


def test_native_sends_bfcl_evals_own_messages_and_tools(captured: dict[str, Captured]) -> None:
    """The model behind awm's endpoint receives bfcl-eval's own first request."""
    from bfcl_eval.model_handler.api_inference.openai_completion import (
        OpenAICompletionsHandler,
    )

    for case_id, run in captured.items():
        entry = copy.deepcopy(run.case.entry)
        compiled = OpenAICompletionsHandler("x-FC", 0.0)._compile_tools({}, entry)["tools"]
        first = run.native[0]
        assert first["messages"] == run.case.turns[0], case_id
        assert first["tools"] == compiled, case_id


# ---------------------------------------------------------------- each adaptation
def test_adaptation_system_prompt(captured: dict[str, Captured]) -> None:
    """awm's own episode prompt (the one its tasks and training use, Hermes format) opens
    every awm request; bfcl sends none but the case's own."""
    expected = get_format("hermes").system_prompt(DEFAULT_SYSTEM_PROMPT, META_TOOLS)
    for case_id, run in captured.items():
        for request in run.awm:
            assert request["messages"][0] == {"role": "system", "content": expected}, case_id
            assert not request.get("tools"), case_id
        own = [m for turn in run.case.turns for m in turn if m["role"] == "system"]
        for request in run.native:
            assert [m for m in request["messages"] if m["role"] == "system"] == own, case_id


def test_adaptation_case_system_prompt(captured: dict[str, Captured]) -> None:
    """The case's system message leads the user's message; otherwise the user's text is
    the case's, verbatim."""
    for case_id, run in captured.items():
        if run.case.multi_turn:
            continue
        first = run.episodes()[0][0]["messages"]
        native = run.native[0]["messages"]
        assert len(first) == 2 and first[1]["role"] == "user"
        lines = [m["content"] if m["role"] == "user" else f"[{m['role']}] {m['content']}"
                 for m in native]  # fmt: skip
        assert first[1]["content"] == "\n".join(lines), case_id
    live = captured["live_multiple_1-0-1"]
    assert [m["role"] for m in live.native[0]["messages"]] == ["system", "user"]
    assert live.episodes()[0][0]["messages"][1]["content"].startswith("[system] You are an agent")


def _as_listed(run: Captured, turn: int, function: dict[str, Any]) -> dict[str, Any]:
    """A function bfcl sends natively, as awm lists it: name, description (less the note
    bfcl repeats after a held-out turn, see ``held_out_descriptions``), parameters."""
    description = function["description"]
    if _repeats_note(run, turn, function["name"]):
        assert description.endswith(NOTE + NOTE), (run.case.id, turn, function["name"])
        description = description[: -len(NOTE)]
    return {
        "name": function["name"],
        "description": description,
        "input_schema": function["parameters"],
    }


NOTE = " Note that the provided function is in Python 3 syntax."


def _repeats_note(run: Captured, turn: int, name: str) -> bool:
    if not run.case.missed or turn < min(run.case.missed):
        return False
    return name not in {d["name"] for k, docs in run.case.missed.items() for d in docs if k <= turn}


def test_adaptation_tools_behind_list_tools(captured: dict[str, Captured]) -> None:
    """Per turn, list_tools lists exactly the functions bfcl sends: same order, names,
    descriptions and parameter schemas."""
    for case_id, run in captured.items():
        for turn, (native, episode) in enumerate(
            zip(run.native_turns(), run.episodes(), strict=True)
        ):
            expected = [_as_listed(run, turn, f) for f in _functions(native)]
            assert _listing(episode) == expected, (case_id, turn)
    # the held-out function is listed from the turn that reveals it, in both modes
    run = captured[MULTI]
    (revealed, docs), *_ = run.case.missed.items()
    held_out = {d["name"] for d in docs}
    for turn, episode in enumerate(run.episodes()):
        names = {t["name"] for t in _listing(episode)}
        assert (held_out <= names) == (turn >= revealed), turn


def test_adaptation_held_out_descriptions(captured: dict[str, Captured]) -> None:
    """From the reveal turn on, bfcl repeats the language note on the earlier functions."""
    run = captured[MULTI]
    revealed = min(run.case.missed)
    for turn, (native, episode) in enumerate(zip(run.native_turns(), run.episodes(), strict=True)):
        listed = {t["name"]: t["description"] for t in _listing(episode)}
        for function in _functions(native):
            doubled = function["description"] == listed[function["name"]] + NOTE
            assert doubled == (turn >= revealed and _repeats_note(run, turn, function["name"]))
            assert listed[function["name"]].count(NOTE.strip()) == 1


def test_adaptation_response_schema(captured: dict[str, Captured]) -> None:
    """bfcl's multi-turn functions carry a ``response`` schema, the listing does not;
    nothing else in a function differs (the test above compares the rest)."""
    for case_id, run in captured.items():
        for request in run.native_turns():
            for function in _functions(request):
                extra = set(function) - {"name", "description", "parameters"}
                assert extra == ({"response"} if run.case.multi_turn else set()), case_id
        for episode in run.episodes():
            assert all("response" not in t for t in _listing(episode)), case_id


def test_adaptation_one_call_per_reply(captured: dict[str, Captured]) -> None:
    """parallel_0's two calls: one native reply; two awm replies (after list_tools)."""
    run = captured["parallel_0"]
    calls = oracle_calls(run.case)[0]
    assert len(calls) == 2
    assert len(run.native) == 1
    assert len(run.awm) == 1 + len(calls) + 1  # list_tools, each call, the answer
    for request in run.awm:
        for message in request["messages"]:
            if message["role"] == "assistant":
                assert message["content"].count("<tool_call>") == 1
    assert "Make at most one call per reply." in run.awm[0]["messages"][0]["content"]


def test_adaptation_call_results(captured: dict[str, Captured]) -> None:
    """Single-turn: acknowledged, asked again; multi-turn: the results bfcl shows natively."""
    run = captured["simple_1"]
    assert len(run.native) == 1
    (name, _args), *_ = oracle_calls(run.case)[0]
    result = run.awm[-1]["messages"][-1]
    assert result["role"] == "tool"
    assert json.loads(result["content"]) == {"status": "accepted", "function": name}

    run = captured[MULTI]
    native = [m["content"] for m in run.native[1]["messages"] if m["role"] == "tool"]
    episode = run.episodes()[0]
    awm = [m["content"] for m in episode[-1]["messages"][4:] if m["role"] == "tool"]
    assert len(native) == len(oracle_calls(run.case)[0]) == 3
    assert awm == native


def test_adaptation_turn_history(captured: dict[str, Captured]) -> None:
    """Later turns: a fresh episode whose user message summarises the earlier turns;
    natively the history goes on, calls and results included."""
    run = captured[MULTI]
    texts = [run.case.turn_messages(t)[-1]["content"] for t in range(len(run.case.turns))]
    finals = ["Done." if calls else IRRELEVANT_ANSWER for calls in oracle_calls(run.case)]
    for turn, (native, episode) in enumerate(zip(run.native_turns(), run.episodes(), strict=True)):
        user = episode[0]["messages"][1]["content"]
        if turn == 0:
            assert user == texts[0]
            continue
        earlier = "".join(f"User: {texts[i]}\nAssistant: {finals[i]}\n" for i in range(turn))
        assert (
            user == f"Earlier in this conversation:\n{earlier}\nNow the user says:\n{texts[turn]}"
        )
        roles = [m["role"] for m in native["messages"]]
        assert roles.count("tool") == sum(len(c) for c in oracle_calls(run.case)[:turn])
        assert native["messages"][-1] == {"role": "user", "content": texts[turn]}


def test_adaptation_history_window(captured: dict[str, Captured]) -> None:
    """The 4-call last turn: its final awm request shows only the last 3 call exchanges."""
    run = captured[MULTI]
    calls = oracle_calls(run.case)[-1]
    assert len(calls) == DEFAULT_WINDOW + 1 == 4
    last = run.episodes()[-1]
    shown = [m for m in last[-1]["messages"] if m["role"] == "assistant"][1:]  # after list_tools
    assert len(shown) == DEFAULT_WINDOW
    first_call = json.loads(shown[0]["content"].split("\n")[1])["arguments"]
    assert first_call["arguments"] == calls[1][1]  # the first call's exchange is gone
    native_last = run.native[-1]["messages"]
    assert sum(len(m.get("tool_calls") or []) for m in native_last) == sum(
        len(c) for c in oracle_calls(run.case)
    )


# ---------------------------------------------------------------- the same everywhere else
def test_sampling_is_the_same_in_both_modes(captured: dict[str, Captured]) -> None:
    content = {"model", "messages", "tools"}
    for case_id, run in captured.items():
        params = [{k: v for k, v in r.items() if k not in content} for r in run.native + run.awm]
        assert params[0] == {"temperature": BfclBenchmark.sampling.temperature}, case_id
        assert all(p == params[0] for p in params), case_id


ADAPTATION_TESTS = {
    "system_prompt": test_adaptation_system_prompt,
    "case_system_prompt": test_adaptation_case_system_prompt,
    "tools_behind_list_tools": test_adaptation_tools_behind_list_tools,
    "held_out_descriptions": test_adaptation_held_out_descriptions,
    "response_schema": test_adaptation_response_schema,
    "one_call_per_reply": test_adaptation_one_call_per_reply,
    "call_results": test_adaptation_call_results,
    "turn_history": test_adaptation_turn_history,
    "history_window": test_adaptation_history_window,
}


def test_every_adaptation_has_a_test() -> None:
    assert set(ADAPTATION_TESTS) == set(AWM_MODE_ADAPTATIONS)


def test_every_adaptation_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## BFCLv3") :]
    section = section[: section.find("\n## ", 1)]
    for name in AWM_MODE_ADAPTATIONS:
        assert f"`{name}`" in section, name
