"""AWM-1K sql-mode tasks decided by the code-augmented judge (``--judge-model``).

The release's sql-mode verifiers only query the databases; the decision is the
judge's. Here the judge model is a rule-based grader behind a real OpenAI-protocol
HTTP server (:class:`ScriptedOpenAIServer`): it answers from what it reads in the
prompt (the task, its criteria, the final answer and the verifier's evidence), so
a verdict changes when the evidence or the criteria do not reach it, and the
tests that use fixed-label judges fail when the judge is not consulted.

The bundle is imported from a small release in the official layout: four
sql-mode tasks (a write, a question, a pre-solved one, a question without a
reference solution) and one code-mode task; ``awm_tasks`` in ``gen_tasks.jsonl``
carries the reference solutions, as a re-imported awm export does.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import ToolCall
from awm_core.toolcalls import get_format
from awm_envs.awm1k.importer import import_awm
from awm_envs.cli.prove import prove_command
from awm_envs.cli.validate import validate_command
from awm_envs.validation.record import load_record, status_text

pytest.importorskip("awm_verify", reason="the code+llm judge and the verifier sandbox")

FIXTURES = Path(__file__).parent / "fixtures" / "awm1k"
DOCS = Path(__file__).parents[3] / "docs" / "awm1k.md"
REF = datetime(2025, 6, 1, 12, 0, 0)
JUDGE = "openai:rule-judge"
SCENARIO = "library_7"

LOANS_OF_BOOK_2 = """
import sqlite3

def verify_task(initial_db_path, final_db_path):
    def loans(path):
        conn = sqlite3.connect(path)
        n = conn.execute(
            "SELECT COUNT(*) FROM loans WHERE user_id = 1 AND book_id = 2").fetchone()[0]
        conn.close()
        return n
    return {"loans_before": loans(initial_db_path), "loans_after": loans(final_db_path)}
"""

TITLES_BY = """
import sqlite3

def verify_task(initial_db_path, final_db_path):
    conn = sqlite3.connect(final_db_path)
    titles = [r[0] for r in conn.execute(
        "SELECT title FROM books WHERE author = '{author}' ORDER BY id")]
    conn.close()
    return {{"titles": titles}}
"""

DUNE_ON_LOAN = """
import sqlite3

def verify_task(initial_db_path, final_db_path):
    conn = sqlite3.connect(final_db_path)
    n = conn.execute("SELECT COUNT(*) FROM loans WHERE user_id = 1 AND book_id = 1").fetchone()[0]
    conn.close()
    return {"loans_after": n}
"""

CODE_DUNE = """
import sqlite3

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    def loans(path):
        conn = sqlite3.connect(path)
        n = conn.execute(
            "SELECT COUNT(*) FROM loans WHERE user_id = 1 AND book_id = 1").fetchone()[0]
        conn.close()
        return n
    grew = loans(final_db_path) > loans(initial_db_path)
    return {"result": "complete" if grew else "others"}
"""


def _task(idx: int, instruction: str, success: str, failure: str, **more: Any) -> dict[str, Any]:
    return {
        "id": f"task_{idx}",
        "instruction": instruction,
        "complexity": "easy",
        "success_criteria": [success],
        "failure_criteria": [failure],
        "tags": ["awm1k"],
        **more,
    }


TASKS = [
    _task(
        0,
        "Borrow 'The Hitchhiker's Guide' for user 1.",
        "a new loan of book 2 for user 1 exists at the end",
        "no new loan of book 2",
        reference_solution=[{"tool": "borrow_book", "arguments": {"book_id": 2}}],
        reference_answer="Borrowed The Hitchhiker's Guide.",
    ),
    _task(
        1,
        "Which books by Austen does the library have?",
        "the answer names Emma",
        "the answer names no Austen title",
        reference_solution=[{"tool": "search_books", "arguments": {}}],
        reference_answer="Emma.",
    ),
    # pre-solved: user 1 has Dune on loan in the seed data already
    _task(
        2,
        "Make sure user 1 has 'Dune' on loan.",
        "user 1 has a loan of book 1 at the end",
        "user 1 has no loan of book 1",
        complexity="medium",
    ),
    _task(
        3,
        "Borrow 'Dune' for user 1.",
        "a new loan of book 1",
        "no new loan of book 1",
        reference_solution=[{"tool": "borrow_book", "arguments": {"book_id": 1}}],
        reference_answer="Borrowed Dune.",
    ),
    _task(
        4,
        "Which books by O'Brien does the library have?",
        "the answer names The Hitchhiker's Guide",
        "the answer names no O'Brien title",
        complexity="medium",
    ),
]
SQL_VERIFIERS = {
    0: LOANS_OF_BOOK_2,
    1: TITLES_BY.format(author="Austen"),
    2: DUNE_ON_LOAN,
    4: TITLES_BY.format(author="O''Brien"),
}


def _make_release(folder: Path) -> Path:
    """An official-layout release of one scenario: the library of the import fixtures."""
    spec = importlib.util.spec_from_file_location(
        "awm1k_make_release", FIXTURES / "make_release.py"
    )
    assert spec and spec.loader
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    base = fixture.rows()

    def library(kind: str) -> dict[str, Any]:
        row = next(r for r in base[kind] if r.get("scenario") == "library_3")
        return {**row, "scenario": SCENARIO}

    rows: dict[str, list[dict[str, Any]]] = {
        "gen_scenario.jsonl": [{"name": "Library 7", "description": "A small library."}],
        "gen_tasks.jsonl": [
            {
                "scenario": SCENARIO,
                "tasks": [t["instruction"] for t in TASKS],
                "awm_tasks": TASKS,
            }
        ],
        "gen_db.jsonl": [library("gen_db.jsonl")],
        "gen_sample.jsonl": [library("gen_sample.jsonl")],
        "gen_spec.jsonl": [library("gen_spec.jsonl")],
        "gen_envs.jsonl": [library("gen_envs.jsonl")],
        "gen_verifier.jsonl": [
            {
                "scenario": SCENARIO,
                "task_idx": i,
                "task": TASKS[i]["instruction"],
                "verification": {"code": code},
            }
            for i, code in SQL_VERIFIERS.items()
        ],  # fmt: skip
        "gen_verifier.pure_code.jsonl": [
            {
                "scenario": SCENARIO,
                "task_idx": 3,
                "task": TASKS[3]["instruction"],
                "verification": {"code": CODE_DUNE},
            }
        ],  # fmt: skip
    }
    folder.mkdir(parents=True)
    for name, lines in rows.items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sqljudge")
    release = _make_release(root / "release")
    import_awm(release, root / "out", reference_time=REF, workers=1)
    bundle = root / "out" / SCENARIO
    verifiers = (bundle / "verifiers.py").read_text()
    assert verifiers.count("official sql-mode") == 4 and verifiers.count("official code-mode") == 1
    return bundle


@pytest.fixture
def bundle(imported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy (prove writes tasks.json), with validation records kept in tmp_path."""
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))
    return Path(shutil.copytree(imported, tmp_path / SCENARIO))


# --------------------------------------------------------------------------- the judge model


def _section(prompt: str, heading: str) -> str:
    start = prompt.index(f"## {heading}\n") + len(heading) + 4
    end = prompt.find("\n\n## ", start)
    return prompt[start : end if end >= 0 else None]


def _is_judge_request(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"].startswith("You grade whether")


def rule_judge(body: dict[str, Any]) -> str:
    """Grade like a careful judge, from the prompt alone: the evidence for writes, the final
    answer (against the success criteria) for questions."""
    prompt = body["messages"][-1]["content"]
    task = _section(prompt, "Task")
    criteria = _section(prompt, "Success criteria")
    verification = _section(prompt, "Verification program")
    assert "no verdict (evidence only)" in verification
    evidence = json.loads(verification.split("Evidence:\n", 1)[1])["official"]
    answer = re.search(r"^Final answer: (.*)$", _section(prompt, "Agent trajectory"), re.M)
    final = answer.group(1) if answer else ""
    if task.startswith("Borrow"):
        done = evidence["loans_after"] > evidence["loans_before"]
        why = f"loans of book 2: {evidence['loans_before']} -> {evidence['loans_after']}"
    elif task.startswith("Make sure"):
        done = evidence["loans_after"] >= 1
        why = f"user 1 has {evidence['loans_after']} loan(s) of Dune"
    else:  # a question: the criteria name the title the answer must give
        wanted = re.search(r"names (Emma|The Hitchhiker's Guide)", criteria)
        assert wanted is not None, criteria
        title = wanted.group(1)
        done = title in final and title in evidence["titles"]
        why = f"the answer {final!r} {'names' if done else 'does not name'} {title}"
    label = "Completed" if done else "Agent Error"
    return json.dumps({"label": label, "reasoning": why})


def fixed_judge(label: str) -> Callable[[dict[str, Any]], str]:
    return lambda body: json.dumps({"label": label, "reasoning": f"always {label}"})


@pytest.fixture
def judge_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., ScriptedOpenAIServer]]:
    """Start a judge server; ``OPENAI_BASE_URL`` points the ``openai:`` backend at it."""
    servers: list[ScriptedOpenAIServer] = []

    def start(reply: Callable[[dict[str, Any]], str]) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer(reply, model="rule-judge").__enter__()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def _validate(bundle: Path, *extra: str) -> tuple[Result, dict[str, dict[str, Any]]]:
    out = CliRunner().invoke(validate_command, [str(bundle), "--json", *extra])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    [env] = json.loads(out.output)
    return out, {t["task_id"]: t for t in env["tasks"]}


def _judged(tasks: dict[str, dict[str, Any]]) -> int:
    return sum(c["decided_by"] == "judge" for t in tasks.values() for c in t["checks"])


# --------------------------------------------------------------------------- validate


def test_without_a_judge_sql_mode_tasks_are_undecided_and_say_how(bundle: Path) -> None:
    out, tasks = _validate(bundle)
    assert out.exit_code == 0, out.output  # undecided is not a failure
    for task_id in ("task_0", "task_1", "task_2", "task_4"):
        task = tasks[task_id]
        assert (task["proof"], task["decided_by"], task["judge_model"]) == (
            "undecided",
            "undecided",
            None,
        )
        assert any("--judge-model SPEC" in note for note in task["notes"])
    assert (tasks["task_3"]["proof"], tasks["task_3"]["decided_by"]) == ("proven", "code")

    table = CliRunner().invoke(validate_command, [str(bundle)])
    assert "undecided" in table.output and "--judge-model" in table.output
    assert status_text(load_record(SCENARIO, bundle)) == "proven 1/5 (4 undecided)"


def test_require_proof_fails_undecided_tasks(bundle: Path) -> None:
    out, tasks = _validate(bundle, "--require-proof")
    assert out.exit_code == 1
    assert tasks["task_0"]["proof"] == "failed"
    assert any("not proven" in p and "--judge-model" in p for p in tasks["task_0"]["problems"])


def test_the_judge_decides_from_the_evidence_and_the_criteria(bundle: Path, judge_server) -> None:
    server = judge_server(rule_judge)
    out, tasks = _validate(bundle, "--judge-model", JUDGE)
    # the pre-solved task fails, so the environment does
    assert out.exit_code == 1, out.output
    for task_id in ("task_0", "task_1"):
        assert tasks[task_id]["proof"] == "proven", tasks[task_id]["problems"]
        assert (tasks[task_id]["decided_by"], tasks[task_id]["judge_model"]) == ("judge", JUDGE)
    reference = next(c for c in tasks["task_0"]["checks"] if c["kind"] == "reference")
    assert reference["judgement"] == {
        "judge": "code+llm",
        "model": JUDGE,
        "label": "Completed",
        "reasoning": "loans of book 2: 0 -> 1",
    }
    # the code-mode task is decided by its verifier, never sent to the judge
    assert (tasks["task_3"]["proof"], tasks["task_3"]["decided_by"]) == ("proven", "code")
    assert all(c["judgement"] is None for c in tasks["task_3"]["checks"])
    # a task without a reference gets the judged pre-solved check alone
    assert (tasks["task_4"]["proof"], tasks["task_4"]["decided_by"]) == ("unproven", "judge")
    # every judged check was one request carrying the task's criteria and the evidence
    assert server.request_count == _judged(tasks) > 0
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    assert all("## Success criteria" in p and "## Failure criteria" in p for p in prompts)

    record = load_record(SCENARIO, bundle)
    assert record is not None
    assert record["decided_by"]["task_0"] == {"by": "judge", "judge_model": JUDGE}
    assert record["decided_by"]["task_3"] == {"by": "code", "judge_model": None}
    assert status_text(record) == "FAILED 3/5 (4 by a judge)"


def test_the_judge_flags_a_task_the_release_ships_pre_solved(bundle: Path, judge_server) -> None:
    judge_server(rule_judge)
    _, tasks = _validate(bundle, "--judge-model", JUDGE)
    task = tasks["task_2"]
    assert task["proof"] == "failed" and task["decided_by"] == "judge"
    [problem] = task["problems"]
    assert problem.startswith("initial: the untouched initial database is already complete")
    assert JUDGE in problem and "1 loan(s) of Dune" in problem


def test_a_judge_that_rejects_the_reference_fails_validation(bundle: Path, judge_server) -> None:
    server = judge_server(fixed_judge("Agent Error"))
    out, tasks = _validate(bundle, "--judge-model", JUDGE)
    assert out.exit_code == 1
    for task_id in ("task_0", "task_1"):
        assert tasks[task_id]["proof"] == "failed" and not tasks[task_id]["reference_complete"]
        assert any(
            p.startswith(f"reference: the judge ({JUDGE}) said Agent Error")
            for p in tasks[task_id]["problems"]
        )
    assert tasks["task_3"]["proof"] == "proven"  # code mode: the judge is not asked
    assert server.request_count == _judged(tasks)


def test_a_judge_that_finds_the_untouched_state_completed_flags_every_sql_task(
    bundle: Path, judge_server
) -> None:
    judge_server(fixed_judge("Completed"))
    _, tasks = _validate(bundle, "--judge-model", JUDGE)
    for task_id in ("task_0", "task_1", "task_2", "task_4"):
        assert tasks[task_id]["proof"] == "failed"
        assert not tasks[task_id]["initial_not_complete"]
        assert any("already complete" in p for p in tasks[task_id]["problems"])
    assert tasks["task_3"]["proof"] == "proven"


def test_partially_completed_is_not_complete(bundle: Path, judge_server) -> None:
    judge_server(fixed_judge("Partially Completed"))
    _, tasks = _validate(bundle, "--judge-model", JUDGE)
    assert not tasks["task_0"]["reference_complete"] and tasks["task_0"]["initial_not_complete"]


def test_a_judge_that_never_answers_usably_is_reported_per_check(
    bundle: Path, judge_server
) -> None:
    judge_server(lambda body: "I think it is fine.")
    out, tasks = _validate(bundle, "--judge-model", JUDGE)
    assert out.exit_code == 1
    [problem] = tasks["task_4"]["problems"]
    assert problem.startswith("initial: judge error: the judge model openai:rule-judge")


def test_a_leak_report_does_not_read_evidence_as_a_verdict(bundle: Path, judge_server) -> None:
    """A tool that keeps a counter in a global: the leak check replays the reference on a
    second instance and compares verdicts; an evidence-only result is no verdict, so the
    report must not say the verifier then disagreed with the judge."""
    from awm_envs.validation.judge import EvidenceJudge
    from awm_envs.validation.validate import validate_environment

    app = (bundle / "app.py").read_text()
    leaky = app.replace("Base = declarative_base()\n", "Base = declarative_base()\n_CALLS = []\n")
    leaky = leaky.replace(
        'loan = Loan(user_id=1, book_id=book.id, loaned_at="2025-06-01 12:00:00")',
        "_CALLS.append(1)\n    loan = Loan(user_id=1, book_id=book.id, "
        'loaned_at=f"2025-06-01 12:00:{len(_CALLS):02d}")',
    )
    assert leaky.count("_CALLS") == 3
    (bundle / "app.py").write_text(leaky)
    judge_server(rule_judge)
    with EvidenceJudge(JUDGE) as judge:
        result = validate_environment(bundle, task_ids=["task_0"], judge=judge)
    assert result.tasks[0].proof == "proven"  # the judge decided on the first replay
    [leak] = result.problems
    assert "_CALLS" in leak and "second fresh instance" in leak
    assert "the verifier then says" not in leak


class RendezvousServer(ScriptedOpenAIServer):
    """A judge endpoint that holds its first ``together`` requests until all of them have
    arrived (or a minute passed): it shows how many were in flight at once."""

    def __init__(self, reply: Callable[[dict[str, Any]], str], together: int) -> None:
        super().__init__(reply, model="rule-judge")
        self.together = together
        self.waiting = 0
        self.most_waiting = 0
        self._all_here: asyncio.Event | None = None

    async def _handle(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._all_here is None:
            self._all_here = asyncio.Event()
        if not self._all_here.is_set():
            self.waiting += 1
            self.most_waiting = max(self.most_waiting, self.waiting)
            if self.waiting >= self.together:
                self._all_here.set()
            try:
                await asyncio.wait_for(self._all_here.wait(), 60)
            except TimeoutError:  # one at a time: they would never all be here
                self._all_here.set()
            finally:
                self.waiting -= 1
        return await super()._handle(body)


def test_a_tasks_checks_are_judged_concurrently(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awm_envs.validation.judge import EvidenceJudge
    from awm_envs.validation.validate import validate_environment

    # task_1, a question: the initial state, the reference and three wrong answers
    with RendezvousServer(rule_judge, together=5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        with EvidenceJudge(JUDGE) as judge:
            result = validate_environment(bundle, task_ids=["task_1"], judge=judge)
    [task] = result.tasks
    assert task.proof == "proven", task.problems
    assert server.request_count == 5 and server.most_waiting == 5


def test_a_judge_model_that_cannot_be_built_is_a_usage_error(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AWM_OPENAI_BASE_URL", "AWM_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    out = CliRunner().invoke(validate_command, [str(bundle), "--judge-model", "openai:gpt-4o"])
    assert out.exit_code == 2
    assert "OPENAI_API_KEY" in out.output and "code+llm" in out.output


# --------------------------------------------------------------------------- prove

HERMES = get_format("hermes")


def _turn(
    tool: str | None = None, arguments: dict[str, Any] | None = None, answer: str = ""
) -> str:
    if tool is None:
        return HERMES.assistant_response(None, content=answer).content
    if tool == "list_tools":
        return HERMES.assistant_response(ToolCall(id="c", name="list_tools")).content
    call = ToolCall(
        id="c", name="call_tool", arguments={"tool_name": tool, "arguments": arguments or {}}
    )
    return HERMES.assistant_response(call).content


def _agent(turns: list[str], judge: Callable[[dict[str, Any]], str]) -> Callable[..., str]:
    """One endpoint for both models: the judge's requests go to ``judge``, the agent's get
    ``turns`` in order."""
    left = list(turns)

    def reply(body: dict[str, Any]) -> str:
        return judge(body) if _is_judge_request(body) else left.pop(0)

    return reply


def _prove(bundle: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    args = [str(bundle), "--model", "openai:agent", "--task", "task_4", "--json", *extra]
    out = CliRunner().invoke(prove_command, args)
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    return out, json.loads(out.output)


OBRIEN = [
    _turn("list_tools"),
    _turn("search_books", {}),
    _turn(answer="By O'Brien: The Hitchhiker's Guide."),
]


def test_prove_with_a_judge_proves_an_sql_mode_task_and_says_who_decided(
    bundle: Path, judge_server
) -> None:
    # without a judge: one attempt, set aside
    server = judge_server(_agent(OBRIEN, rule_judge))
    out, report = _prove(bundle, "--attempts", "2")
    proof = report["tasks"]["task_4"]
    assert proof["status"] == "skipped" and "--judge-model" in proof["note"]
    assert proof["attempts"][0]["decided_by"] == "undecided"
    assert server.request_count == len(OBRIEN)  # the agent's turns, no judge

    # with one: the set-aside task is tried again and proven by the judge
    server = judge_server(_agent(OBRIEN, rule_judge))
    out, report = _prove(bundle, "--attempts", "2", "--judge-model", JUDGE)
    assert out.exit_code == 0, out.output
    assert report["judge_model"] == JUDGE
    proof = report["tasks"]["task_4"]
    assert proof["status"] == "proven"
    assert (proof["decided_by"], proof["judge_model"]) == ("judge", JUDGE)
    kept = proof["attempts"][-1]
    assert kept["accepted"] and kept["judge_label"] == "Completed"
    assert "names The Hitchhiker's Guide" in kept["judge_reasoning"]
    task = next(t for t in json.loads((bundle / "tasks.json").read_text()) if t["id"] == "task_4")
    assert [step["tool"] for step in task["reference_solution"]] == ["search_books"]

    # and validation with the judge now proves it from its new reference
    _, tasks = _validate(bundle, "--judge-model", JUDGE)
    assert tasks["task_4"]["proof"] == "proven" and tasks["task_4"]["judge_model"] == JUDGE


def test_prove_keeps_no_episode_the_judge_rejects(bundle: Path, judge_server) -> None:
    judge_server(_agent(OBRIEN, fixed_judge("Agent Error")))
    out, report = _prove(bundle, "--attempts", "1", "--judge-model", JUDGE)
    assert out.exit_code == 1
    [attempt] = report["tasks"]["task_4"]["attempts"]
    assert not attempt["accepted"] and attempt["decided_by"] == "judge"
    assert (attempt["judge_label"], attempt["judge_reasoning"]) == (
        "Agent Error",
        "always Agent Error",
    )
    assert f"the judge ({JUDGE}) said Agent Error" in attempt["reason"]
    task = next(t for t in json.loads((bundle / "tasks.json").read_text()) if t["id"] == "task_4")
    assert "reference_solution" not in task


# --------------------------------------------------------------------------- docs


def _doc_lines() -> list[list[str]]:
    """The commands of docs/awm1k.md's judge block (the one naming --judge-model)."""
    blocks = re.findall(r"```bash\n(.*?)```", DOCS.read_text(), re.S)
    [block] = [b for b in blocks if "--judge-model" in b]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_the_documented_judge_commands_run(bundle: Path, judge_server) -> None:
    from awm_core.cli import build_cli

    lines = _doc_lines()
    assert [line[:3] for line in lines] == [["awm", "envs", "validate"], ["awm", "envs", "prove"]]
    server = judge_server(_agent(OBRIEN, rule_judge))
    # the documented bundle is this test's copy; the documented models are the server's
    validate, prove = (
        [str(bundle) if a.startswith("awm1k-envs/") else a for a in line[1:]] for line in lines
    )
    out = CliRunner().invoke(build_cli(), validate)
    assert out.exit_code == 1  # this bundle has a pre-solved task: the judge finds it
    assert "already complete" in out.output and "decided by a judge" in out.output
    asked = server.request_count
    assert asked > 0
    out = CliRunner().invoke(build_cli(), [*prove, "--task", "task_4"])
    assert out.exit_code == 0, out.output
    assert server.request_count > asked + len(OBRIEN)  # the agent's turns, and the judge
    _, tasks = _validate(bundle, "--judge-model", JUDGE)
    assert tasks["task_4"]["proof"] == "proven"
