"""``awm envs`` commands, driven through click on the package's own group."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from awm_envs.cli.main import envs


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
    tables = {d["table"]: d for d in out["diff"]["tables"]}
    assert len(tables["loans"]["inserted"]) == 1 and len(tables["copies"]["updated"]) == 1


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


def test_every_envs_sub_command_is_attached_by_the_plugin() -> None:
    """Sub-commands are added explicitly by the plugin, not by importing modules for effect."""
    from awm_core.cli import build_cli

    group = build_cli().commands["envs"]
    assert isinstance(group, click.Group)
    # list_commands: the lazily imported sub-commands too (awm_core.lazycli)
    assert set(group.list_commands(click.Context(group))) >= {
        "call",
        "export-awm",
        "import-awm",
        "list",
        "sandbox",
        "serve",
        "show",
        "validate",
    }


def test_a_broken_command_module_is_named_not_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import error in `awm envs validate` stops that command, naming its module.

    Sub-commands are imported when they run (awm_core.lazycli), so the rest of
    `awm envs` keeps working and `awm envs validate` says what failed to load.
    """
    import sys

    from awm_core.errors import PluginError
    from awm_envs import plugin

    monkeypatch.setitem(sys.modules, "awm_envs.cli.validate", None)  # its import now fails
    cli = click.Group("awm")
    plugin.register_commands(cli=cli)
    envs = cli.commands["envs"]
    assert isinstance(envs, click.Group) and "validate" in envs.list_commands(click.Context(envs))
    # the `envs` group is shared: an earlier test may have loaded (and cached) validate already
    monkeypatch.delitem(envs.commands, "validate", raising=False)
    with pytest.raises(
        PluginError, match="'validate' could not be loaded from awm_envs.cli.validate"
    ):
        envs.get_command(click.Context(envs), "validate")
