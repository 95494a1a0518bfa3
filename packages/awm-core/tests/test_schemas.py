"""Versioned JSON Schemas exported from the boundary models."""

from __future__ import annotations

import json

import jsonschema
import pytest

from awm_core.errors import SchemaNotFoundError
from awm_core.models import Complexity, Task, ToolCallStep, complexity_for_calls
from awm_core.schemas import SCHEMA_VERSION, json_schema, schema_names

EXPECTED = {
    "scenario",
    "task",
    "tool-spec",
    "manifest",
    "message",
    "tool-call",
    "trajectory",
    "verdict",
    "reward",
}


def test_every_boundary_model_has_a_schema() -> None:
    assert EXPECTED <= set(schema_names())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_schema_is_valid_json_schema_with_version(name: str) -> None:
    schema = json_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"urn:awm:schema:{name}:v{SCHEMA_VERSION}"


def test_task_schema_validates_a_serialised_task_and_rejects_a_bad_one() -> None:
    task = Task(
        id="t1",
        instruction="Cancel order 7",
        complexity=Complexity.EASY,
        reference_solution=[ToolCallStep(tool="cancel_order", arguments={"order_id": 7})],
    )
    validator = jsonschema.Draft202012Validator(json_schema("task"))
    validator.validate(json.loads(task.model_dump_json()))
    bad = {"id": "t1", "instruction": "x", "complexity": "trivial"}
    assert list(validator.iter_errors(bad))


def test_unknown_schema_name_is_a_typed_error_listing_names() -> None:
    with pytest.raises(SchemaNotFoundError, match="trajectory"):
        json_schema("trajectroy")


@pytest.mark.parametrize(
    ("calls", "bucket"),
    [
        (1, "easy"),
        (2, "easy"),
        (3, "medium"),
        (5, "medium"),
        (6, "hard"),
        (10, "hard"),
        (11, "very_hard"),
        (17, "very_hard"),
    ],
)
def test_complexity_buckets_follow_the_paper(calls: int, bucket: str) -> None:
    assert complexity_for_calls(calls) == bucket


def test_awm_schema_cli_prints_json_and_errors_cleanly(run_awm) -> None:
    out = run_awm("schema", "verdict")
    assert out.returncode == 0
    assert "Partially Completed" in json.dumps(json.loads(out.stdout))
    bad = run_awm("schema", "nope")
    assert bad.returncode == 2 and "unknown schema 'nope'" in bad.stderr
