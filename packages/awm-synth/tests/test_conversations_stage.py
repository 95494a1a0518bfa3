"""``awm synth conversations``: conversational variants of shipped tasks, offline from the
recordings, self-corrected by the communication checks and proven by validation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.models import Task
from awm_synth.pipeline import RunSummary
from awm_synth.stages.conversations import ConversationSet, candidates, check_conversations
from awm_synth.store.checkpoint import RunDir


@pytest.fixture
def run(replay_run: tuple[Path, RunSummary], tmp_path: Path) -> Path:
    """A copy of the shared replay run (its bundles are read by other tests as they are)."""
    out = tmp_path / "run"
    shutil.copytree(replay_run[0], out)
    return out


def _conversations(out: Path) -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(
        build_cli(), ["synth", "conversations", "--out", str(out), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _tasks(bundle: Path) -> list[Task]:
    return [Task.model_validate(t) for t in json.loads((bundle / "tasks.json").read_text())]


def test_variants_are_added_and_proven_by_validation(run: Path) -> None:
    from awm_envs import validate_environment

    outcome = _conversations(run)
    added = outcome["online_bookstore"]["added"]
    assert added == ["conv_buy_harbor_lights", "conv_cancel_pending_order"]
    # scenarios without a recording are reported, not fatal, and not checkpointed
    assert "no replay recording" in str(outcome["project_tracker"]["error"])
    bundle = run / "bundles" / "online_bookstore"
    tasks = {t.id: t for t in _tasks(bundle)}
    variant = tasks["conv_cancel_pending_order"]
    original = tasks["cancel_pending_order"]
    assert variant.user is not None and variant.user.opening
    assert variant.reference_solution == original.reference_solution
    assert variant.verifier == original.verifier
    result = validate_environment(bundle)
    assert result.passed, result.problems + [p for t in result.tasks for p in t.problems]
    proofs = {t.task_id: t for t in result.tasks}
    for task_id in added:
        checks = proofs[task_id].checks
        wrong = [c for c in checks if c.description.startswith(("Guesses", "Acts before"))]
        assert len(wrong) == 2 and not any(c.complete for c in wrong)
        acted = next(c for c in wrong if c.description.startswith("Acts before"))
        assert acted.evidence["communication"]["unconfirmed"]


def test_a_reply_that_gives_the_fact_away_is_sent_back(run: Path) -> None:
    _conversations(run)
    record = RunDir(run).load_stage("online_bookstore", "conversations")
    assert record is not None and record.accepted
    first, second = record.attempts
    assert "opening_reveals" in first.causes
    assert not second.errors


def test_a_second_run_reuses_the_checkpoint(run: Path) -> None:
    _conversations(run)
    bundle = run / "bundles" / "online_bookstore"
    before = (bundle / "tasks.json").read_text()
    again = _conversations(run)
    assert again["online_bookstore"]["added"] == [
        "conv_buy_harbor_lights",
        "conv_cancel_pending_order",
    ]
    assert (bundle / "tasks.json").read_text() == before


def test_a_variant_whose_wrong_conversations_pass_is_rejected(
    replay_run: tuple[Path, RunSummary],
) -> None:
    bundle = replay_run[0] / "bundles" / "online_bookstore"
    tasks = candidates(_tasks(bundle))
    lax = ConversationSet.model_validate(
        {
            "variants": [
                {
                    "task_id": "cancel_pending_order",
                    "user": {
                        "opening": "Hi, I need to cancel an order.",
                        "goal": "Cancel order 3.",
                        # no argument, no confirm_before: guessing and acting at once pass
                        "hidden_facts": [{"name": "order number", "value": "3"}],
                        "reference_messages": [{"after_calls": 1, "text": "Cancelled."}],
                        "replies": ["Thanks ###STOP###"],
                    },
                }
            ]
        }
    )
    result = check_conversations(tasks, lax)
    assert "wrong_conversation_passes" in result.causes
