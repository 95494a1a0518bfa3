"""``awm envs prove``: an agent (the scripted backend here) finds reference solutions for
imported tasks; only trajectories the verifier and the wrong-attempt checks accept are kept."""

from __future__ import annotations

import importlib.util
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_core.models import ToolCall
from awm_core.toolcalls import get_format
from awm_envs.awm1k.importer import import_awm

FIXTURES = Path(__file__).parent / "fixtures" / "awm1k"
REF = datetime(2025, 6, 1, 12, 0, 0)
HERMES = get_format("hermes")


def _turn(
    tool: str | None = None, arguments: dict[str, Any] | None = None, answer: str = ""
) -> str:
    if tool is None:
        return HERMES.assistant_response(None, content=answer).content
    if tool == "list_tools":
        call = ToolCall(id="c", name="list_tools", arguments={})
    else:
        call = ToolCall(
            id="c", name="call_tool", arguments={"tool_name": tool, "arguments": arguments or {}}
        )
    return HERMES.assistant_response(call).content


def _import_library(root: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "awm1k_make_release", FIXTURES / "make_release.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    release = module.write_release(root / "release")
    import_awm(release, root / "out", reference_time=REF, workers=1, only=["library_3"])
    return root / "out" / "library_3"


# task_0 ("Borrow The Hitchhiker's Guide", a code-mode verifier) then task_1 (sql mode).
SCRIPT = [
    # attempt 1: borrows the wrong book: the verifier says not complete
    _turn("list_tools"),
    _turn("borrow_book", {"book_id": 1}),
    _turn(answer="I borrowed it."),
    # attempt 2: searches, fails one call (kept out of the reference), borrows the right one
    _turn("list_tools"),
    _turn("search_books", {"q": "Hitchhiker"}),
    _turn("borrow_book", {"book_id": 99}),
    _turn("borrow_book", {"book_id": 2}),
    _turn(answer="Borrowed The Hitchhiker's Guide."),
    # task_1: its sql-mode verifier cannot decide: one attempt, then no more
    _turn("list_tools"),
    _turn("search_books", {}),
    _turn(answer="Books by O'Brien: The Hitchhiker's Guide."),
]


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Path]:
    from awm_envs.cli.prove import prove_command

    root = tmp_path_factory.mktemp("prove")
    bundle = _import_library(root)
    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT))
    out = CliRunner().invoke(
        prove_command, [str(bundle), "--model", f"scripted:{script}", "--attempts", "3", "--json"]
    )
    assert out.exit_code == 0, out.output
    return bundle, json.loads(out.output), script


def test_a_complete_trajectory_that_survives_the_checks_becomes_the_reference(proved) -> None:
    bundle, report, _ = proved
    proof = report["tasks"]["task_0"]
    assert proof["status"] == "proven"
    assert [a["accepted"] for a in proof["attempts"]] == [False, True]
    assert "not complete" in proof["attempts"][0]["reason"]
    task = next(t for t in json.loads((bundle / "tasks.json").read_text()) if t["id"] == "task_0")
    assert task["reference_solution"] == [
        {"tool": "search_books", "arguments": {"q": "Hitchhiker"}},
        {"tool": "borrow_book", "arguments": {"book_id": 2}},
    ]
    assert task["complexity"] == "easy" and "proven-by-agent" in task["tags"]
    assert "unproven" not in task["tags"]


def test_an_undecidable_verifier_is_not_retried(proved) -> None:
    _, report, _ = proved
    proof = report["tasks"]["task_1"]
    assert proof["status"] == "skipped" and len(proof["attempts"]) == 1
    assert "cannot decide" in proof["note"]


def test_the_proven_task_now_validates_as_proven(proved) -> None:
    from awm_envs.validation.validate import validate_environment

    bundle, _, _ = proved
    result = {t.task_id: t.proof for t in validate_environment(bundle).tasks}
    assert result == {"task_0": "proven", "task_1": "undecided"}  # sql mode, no judge model


def test_prove_resumes_without_redoing_work(proved) -> None:
    from awm_envs.cli.prove import prove_command

    bundle, _, script = proved
    script.write_text("[]")  # a rerun that called the model would fail
    out = CliRunner().invoke(
        prove_command, [str(bundle), "--model", f"scripted:{script}", "--json"]
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["counts"] == {"proven": 1, "unproven": 0, "skipped": 1}
    assert len(report["tasks"]["task_0"]["attempts"]) == 2


def test_a_lenient_verifier_is_caught_by_the_wrong_attempt_checks(tmp_path: Path) -> None:
    """A verifier that says complete for anything: the agent's trajectory is complete, but
    doing nothing is complete too, so it is not kept."""
    from awm_envs.cli.prove import prove_command

    bundle = _import_library(tmp_path)
    verifiers = (bundle / "verifiers.py").read_text()
    lenient = verifiers.replace(
        'return {"complete": complete, "evidence": {"official": out}}',
        'return {"complete": True, "evidence": {"official": out}}',
    )
    assert lenient != verifiers
    (bundle / "verifiers.py").write_text(lenient)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [_turn("list_tools"), _turn("borrow_book", {"book_id": 2}), _turn(answer="Done.")]
        )
    )
    out = CliRunner().invoke(
        prove_command,
        [
            str(bundle),
            "--model",
            f"scripted:{script}",
            "--attempts",
            "1",
            "--task",
            "task_0",
            "--json",
        ],
    )
    assert out.exit_code == 1, out.output
    attempt = json.loads(out.output)["tasks"]["task_0"]["attempts"][0]
    assert attempt["complete"] and not attempt["accepted"]
    assert "checks failed" in attempt["reason"]
    task = next(t for t in json.loads((bundle / "tasks.json").read_text()) if t["id"] == "task_0")
    assert "reference_solution" not in task
