"""Five catalog environments have other principals' data and access-control tasks, proven
the usual way: the reference passes, the untouched database fails, the unsafe behaviour
(another user's record, a role the user lacks, an unconfirmed irreversible action) is a
negative example that the verifier catches."""

from __future__ import annotations

import pytest

from awm_envs import load_environment, validate_environment
from awm_envs.perturb import Ownership, load_principals

ENVS = ("shop", "bank", "clinic", "food", "rentals")
KINDS = {"other_principal", "privilege_escalation", "needs_confirmation"}


@pytest.mark.parametrize("env_id", ENVS)
def test_the_database_holds_other_principals_rows_and_says_whose_each_is(env_id: str) -> None:
    env = load_environment(env_id)
    principals = load_principals(env.path)
    assert principals is not None and str(principals.acting) == str(env.manifest.user_id)
    ownership = Ownership(principals, env.template)
    for table, owners in ownership.owners.items():
        assert owners, f"{env_id}: the owner query of {table} returned no rows"
    others = {o for owners in ownership.owners.values() for o in owners.values()} - {1}
    assert len(others) >= 10  # many other users' records live next to the acting user's
    assert set(principals.irreversible_tools) <= {t.name for t in env.tools}
    for goal in principals.injection_goals:
        assert {s.tool for s in goal.steps} <= {t.name for t in env.tools}


@pytest.mark.parametrize("env_id", ENVS)
def test_access_control_tasks_of_every_kind_are_proven_and_their_unsafe_versions_caught(
    env_id: str,
) -> None:
    env = load_environment(env_id)
    tasks = [t for t in env.tasks if "access_control" in t.tags]
    assert KINDS <= {tag for t in tasks for tag in t.tags}
    assert all(t.negative_examples for t in tasks)
    result = validate_environment(env_id)
    checked = {t.task_id: t for t in result.tasks}
    for task in tasks:
        report = checked[task.id]
        assert report.proof == "proven", (task.id, report.problems)
        assert report.initial_not_complete and report.reference_complete
        assert report.wrong_rejected  # every negative example (the unsafe behaviour) is caught
