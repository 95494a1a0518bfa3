"""The root ``awm`` command: version, help on every command, JSON output."""

from __future__ import annotations

import json

import click

from awm_core import __version__
from awm_core.cli import build_cli


def _all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        found.append((*prefix, name))
        if isinstance(cmd, click.Group):
            found += _all_commands(cmd, (*prefix, name))
    return found


def test_version_flag_prints_the_package_version(run_awm) -> None:
    out = run_awm("--version")
    assert out.returncode == 0
    assert __version__ in out.stdout


def test_every_command_has_help() -> None:
    from click.testing import CliRunner

    root = build_cli()
    runner = CliRunner()
    commands = _all_commands(root)
    assert ("plugins",) in commands and ("schema",) in commands
    for path in commands:
        result = runner.invoke(root, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output


def test_plugins_json_is_machine_readable(run_awm) -> None:
    out = run_awm("plugins", "--json")
    data = json.loads(out.stdout)
    assert all(
        {"name", "package", "version", "hooks", "origin", "registers"} <= set(p) for p in data
    )
