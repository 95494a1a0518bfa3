"""Render the CLI reference (docs/cli.md) from the CLI itself, so it cannot drift.

``python -m awm_core.clidoc > docs/cli.md`` regenerates it; a test fails when
the committed file differs from what the installed commands say.
"""

from __future__ import annotations

import click

from awm_core.cli import build_cli

HELP_NAMES = ["-h", "--help"]

HEADER = """# awm command reference

Generated from the CLI by `python -m awm_core.clidoc > docs/cli.md`; do not edit by hand.
Which commands exist depends on the installed packages (this file is made with all of them).
"""


def _walk(cmd: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found = [(path, cmd)]
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += _walk(sub, [*path, name])
    return found


def render_cli_reference(root: click.Command | None = None) -> str:
    """Markdown with one section per command: its ``--help`` text verbatim."""
    root = root or build_cli()
    parts = [HEADER]
    for path, cmd in _walk(root, ["awm"]):
        info_name = path[-1]
        parent = None
        for name in path[:-1]:
            parent = click.Context(
                click.Command(name), info_name=name, parent=parent, help_option_names=HELP_NAMES
            )
        # every command inherits the root's -h/--help, as it does when it runs
        ctx = click.Context(
            cmd,
            info_name=info_name,
            parent=parent,
            terminal_width=100,
            max_content_width=100,
            help_option_names=HELP_NAMES,
        )
        # click keeps the help option of the first context that asked for it: a command
        # invoked on its own before (a test's CliRunner) would show only --help here
        if hasattr(cmd, "_help_option"):
            cmd._help_option = None
        parts.append(f"## `{' '.join(path)}`\n\n```text\n{cmd.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover
    print(render_cli_reference(), end="")
