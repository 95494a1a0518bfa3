"""In-process instances: FastAPI semantics, error results, rollback of failed calls, reset."""

from __future__ import annotations

import asyncio

from awm_core.session import EnvInstance, EnvSession, SyncInstance
from awm_envs import Environment


def test_success_returns_the_response_model(library_env: Environment) -> None:
    with library_env.instance() as inst:
        result = inst.call_tool_sync("get_book", {"book_id": 3})
        assert not result.is_error
        assert result.content["title"] == "Solaris" and result.content["available_copies"] == 1


def test_http_errors_become_error_results(library_env: Environment) -> None:
    with library_env.instance() as inst:
        result = inst.call_tool_sync("get_book", {"book_id": 999})
        assert result.is_error and result.error_type == "not_found"
        assert "search_books" in result.content
        conflict = inst.call_tool_sync("checkout_copy", {"copy_id": 2})
        assert conflict.error_type == "conflict" and "available copies" in conflict.content


def test_arguments_are_validated_against_the_schema_first(library_env: Environment) -> None:
    with library_env.instance() as inst:
        result = inst.call_tool_sync("checkout_copy", {"copy_id": "four", "colour": "red"})
        assert result.error_type == "invalid_arguments"
        assert "copy_id" in result.content and "colour" in result.content
        assert "checkout_copy(copy_id: integer)" in result.content
        missing = inst.call_tool_sync("checkout_copy", {})
        assert "copy_id" in missing.content and "required" in missing.content


def test_pydantic_constraints_reach_the_agent(library_env: Environment) -> None:
    with library_env.instance() as inst:
        result = inst.call_tool_sync("add_review", {"book_id": 1, "rating": 9, "body": "x"})
        assert result.is_error and result.error_type == "invalid_arguments"


def test_unknown_tool_lists_the_tools(library_env: Environment) -> None:
    with library_env.instance() as inst:
        result = inst.call_tool_sync("drop_tables", {})
        assert result.error_type == "unknown_tool" and "checkout_copy" in result.content


def test_writes_commit_and_reset_restores_the_template(library_env: Environment) -> None:
    with library_env.instance() as inst:
        assert not inst.call_tool_sync("checkout_copy", {"copy_id": 4}).is_error
        assert inst.query_sync("SELECT status FROM copies WHERE copy_id = 4") == [("on_loan",)]
        inst.reset_sync()
        assert inst.snapshot_sync() == library_env.template


def test_a_call_that_fails_after_committing_changes_nothing(hostile_env: Environment) -> None:
    with hostile_env.instance() as inst:
        before = inst.snapshot_sync()
        result = inst.call_tool_sync("debug_write_then_fail", {})
        assert result.is_error and result.error_type == "tool_error"
        assert inst.snapshot_sync() == before


def test_constraint_violation_is_a_conflict_and_rolled_back(library_env: Environment) -> None:
    with library_env.instance() as inst:
        assert not inst.call_tool_sync(
            "add_review", {"book_id": 1, "rating": 4, "body": "good"}
        ).is_error
        before = inst.snapshot_sync()
        dup = inst.call_tool_sync("add_review", {"book_id": 1, "rating": 2, "body": "again"})
        assert dup.error_type == "conflict" and "UNIQUE" in dup.content
        assert inst.snapshot_sync() == before


def test_instances_are_isolated(library_env: Environment) -> None:
    a, b = library_env.instance(), library_env.instance()
    assert not a.call_tool_sync("checkout_copy", {"copy_id": 4}).is_error
    assert not b.call_tool_sync("checkout_copy", {"copy_id": 4}).is_error
    a.close_sync()
    b.close_sync()


def test_async_form_and_async_endpoints(library_env: Environment) -> None:
    async def run() -> None:
        inst = library_env.instance()
        assert isinstance(inst, EnvSession) and isinstance(inst, EnvInstance)
        assert isinstance(inst, SyncInstance)
        assert await inst.snapshot() == library_env.template
        assert len(await inst.list_tools()) == len(library_env.tools)
        assert (await inst.call_tool("delete_review", {"review_id": 1})).error_type == "not_found"
        assert not (
            await inst.call_tool("add_review", {"book_id": 2, "rating": 5, "body": "yes"})
        ).is_error
        review_id = inst.query_sync("SELECT MAX(review_id) FROM reviews")[0][0]
        assert (await inst.call_tool("delete_review", {"review_id": review_id})).content == {
            "deleted": review_id
        }
        inst.close_sync()

    asyncio.run(run())


def test_sync_form_runs_async_endpoints_too(library_env: Environment) -> None:
    with library_env.instance() as inst:
        assert inst.call_tool_sync("delete_review", {"review_id": 1}).error_type == "not_found"


def test_snapshot_and_restore(library_env: Environment) -> None:
    with library_env.instance() as inst:
        inst.call_tool_sync("checkout_copy", {"copy_id": 4})
        image = inst.snapshot_sync()
        inst.reset_sync()
        inst.restore_sync(image)
        assert inst.query_sync("SELECT status FROM copies WHERE copy_id = 4") == [("on_loan",)]


def test_closed_instance_answers_with_an_error(library_env: Environment) -> None:
    inst = library_env.instance()
    inst.close_sync()
    assert inst.call_tool_sync("get_book", {"book_id": 1}).error_type == "environment_error"
