"""The catalog's conversational tasks are proven: the reference conversation completes each,
the untouched database does not, and the wrong conversations (acting before asking,
guessing a parameter) are rejected for the reason they are wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from awm_core.models import NegativeExample, Task
from awm_envs.bundle.sources import CATALOG_DIR
from awm_envs.validation.replay import open_environment
from awm_envs.validation.runner import VerifierRunner
from awm_envs.validation.taskcheck import validate_task_with_replay

ENVS = ("shop", "travel", "tickets", "learning", "social")


def catalog_path(env_id: str) -> Path:
    return CATALOG_DIR / env_id


def _validate(env_id: str, task: Task):  # type: ignore[no-untyped-def]
    path = catalog_path(env_id)
    env = open_environment(path)
    runner = VerifierRunner.for_bundle(path, env.verifier_source, None)
    return validate_task_with_replay(env_id, env, task, runner)[0]


@pytest.mark.parametrize("env_id", ENVS)
def test_each_environment_has_three_proven_conversational_tasks(env_id: str) -> None:
    env = open_environment(catalog_path(env_id))
    tasks = [t for t in env.tasks if t.user is not None]
    assert len(tasks) >= 3
    for task in tasks:
        result = _validate(env_id, task)
        assert result.problems == [], (task.id, result.problems)
        kinds = {c.kind for c in result.checks}
        assert {"initial", "reference", "negative_example"} <= kinds
        for check in result.checks:
            if check.kind != "negative_example":
                continue
            talk = check.evidence["communication"]
            said = check.description.lower()
            if said.startswith("acts before asking"):
                assert talk["unconfirmed"], (task.id, check.description)
            if said.startswith("guesses") and "wrong" not in said:
                assert talk["guessed"] or talk["unconfirmed"], (task.id, check.description)


def test_a_negative_that_is_really_right_is_reported() -> None:
    """The proof can fail: the reference conversation offered as a wrong one is caught."""
    env = open_environment(catalog_path("shop"))
    task = next(t for t in env.tasks if t.id == "conv_cancel_order")
    assert task.user is not None
    right = NegativeExample(
        description="the reference conversation itself",
        solution=task.reference_solution or [],
        messages=task.user.reference_messages,
    )
    bad = task.model_copy(update={"negative_examples": [right]})
    result = _validate("shop", bad)
    assert not result.wrong_rejected
    assert any("the reference conversation itself" in p for p in result.problems)


def test_a_reference_that_never_confirms_is_not_proven() -> None:
    env = open_environment(catalog_path("shop"))
    task = next(t for t in env.tasks if t.id == "conv_cancel_order")
    assert task.user is not None
    hasty = task.user.model_copy(
        update={
            "reference_messages": [
                task.user.reference_messages[0],
                task.user.reference_messages[2],
            ],
            "replies": ["It's order 16.", "Thanks. ###STOP###"],
        }
    )
    result = _validate("shop", task.model_copy(update={"user": hasty}))
    assert not result.reference_complete
    reference = next(c for c in result.checks if c.kind == "reference")
    assert reference.evidence["communication"]["unconfirmed"]
