"""docs/cli.md is generated from the CLI; this fails when a command changed and the doc did not."""

from __future__ import annotations

from pathlib import Path

from awm_core.clidoc import render_cli_reference


def test_cli_reference_matches_the_installed_commands(repo_root: Path) -> None:
    committed = (repo_root / "docs" / "cli.md").read_text(encoding="utf-8")
    current = render_cli_reference()
    assert committed == current, (
        "docs/cli.md is stale; regenerate it with: uv run python -m awm_core.clidoc > docs/cli.md"
    )


def test_cli_reference_covers_every_package_group() -> None:
    text = render_cli_reference()
    for command in (
        "awm envs validate",
        "awm verify run",
        "awm synth all",
        "awm demo",
        "awm run",
        "awm plugins",
    ):
        assert f"## `{command}`" in text


def test_cli_reference_does_not_depend_on_what_ran_before(repo_root: Path) -> None:
    """click keeps the help option of the first context that asks: commands run on their own
    (as tests do with CliRunner) must not turn ``-h, --help`` into ``--help`` in the doc."""
    from click.testing import CliRunner

    from awm_envs.cli.awm1k import import_awm_command
    from awm_envs.cli.main import envs

    for command, args in (
        (envs, ["--help"]),
        (envs, ["serve", "--help"]),
        (import_awm_command, ["--help"]),
    ):
        assert CliRunner().invoke(command, args).exit_code == 0
    assert render_cli_reference() == (repo_root / "docs" / "cli.md").read_text(encoding="utf-8")
