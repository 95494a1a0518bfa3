"""``awm envs`` commands, driven through click on the package's own group."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from awm_envs.cli import envs


def test_list_finds_catalog_folders(library_path: Path) -> None:
    result = CliRunner().invoke(envs, ["list", "--json", "--catalog", str(library_path.parent)])
    assert result.exit_code == 0, result.output
    assert "library" in {row["id"] for row in json.loads(result.output)}


def test_env_path_variable(library_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AWM_ENV_PATH", str(library_path.parent))
    result = CliRunner().invoke(envs, ["show", "library", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["manifest"]["id"] == "library" and shown["tables"]["books"] == 6


def test_call_prints_result_and_row_diff(library_path: Path) -> None:
    result = CliRunner().invoke(
        envs, ["call", str(library_path), "checkout_copy", "--args", '{"copy_id": 1}', "--json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["result"]["content"]["copy_id"] == 1
    tables = {d["table"]: d for d in out["diff"]}
    assert len(tables["loans"]["added"]) == 1 and len(tables["copies"]["changed"]) == 1


def test_call_failure_exits_nonzero_with_the_message(library_path: Path) -> None:
    result = CliRunner().invoke(
        envs, ["call", str(library_path), "get_book", "--args", '{"book_id": 77}']
    )
    assert (
        result.exit_code == 1
        and "not found" in result.output
        and "no database changes" in result.output
    )


def test_unknown_environment_is_a_typed_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(envs, ["show", "no-such-env"])
    assert result.exit_code != 0 and "AWM_ENV_PATH" in str(result.exception)
