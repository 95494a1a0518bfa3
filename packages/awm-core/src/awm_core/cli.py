"""The ``awm`` command: one root group; every package adds its own sub-commands.

Commands come from the ``register_commands`` hook, so ``awm envs`` exists only
where awm-envs is installed, and a third-party plugin can add ``awm mything``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from awm_core.errors import AWMError, PluginError
from awm_core.lazycli import LazyGroup
from awm_core.plugins import get_plugins, load_plugins, pm


def emit_json(data: Any) -> None:
    """Write machine-readable output: one JSON document on stdout."""
    click.echo(json.dumps(data, indent=2, default=str))


ELSEWHERE = {
    "envs": "awm-envs",
    "verify": "awm-verify",
    "synth": "awm-synth",
    "train": "awm-train",
    "bench": "awm-bench",
    "demo": "awm-bench",
}
"""awm's own commands that other packages add, by the package that brings each."""


class _Root(LazyGroup):
    """The ``awm`` group: a command another awm package brings is named with that package
    when it is missing (a light install), and a typo gets a suggestion."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and self.get_command(ctx, name) is None and not name.startswith("-"):
            package = ELSEWHERE.get(name)
            if package is not None:
                raise click.UsageError(
                    f"`awm {name}` comes with {package}, which is not installed here: "
                    f"install it (docs/install.md), e.g. pip install ./packages/{package}",
                    ctx,
                )
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            if close:
                raise click.UsageError(f"No such command {name!r}. Did you mean {close[0]!r}?", ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(None, "--version", "-V", package_name="awm-core", prog_name="awm")
def cli() -> None:
    """awm: executable, database-backed tool-use environments for training agents.

    Shell completion (bash, zsh, fish): add
    eval "$(_AWM_COMPLETE=bash_source awm)" to ~/.bashrc (zsh_source, fish_source).
    """


@cli.command(name="plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List installed plugins, their versions, hooks and what they register."""
    infos = get_plugins()
    if as_json:
        emit_json(
            [
                {
                    "name": i.name,
                    "package": i.package,
                    "version": i.version,
                    "origin": i.origin,
                    "hooks": i.hooks,
                    "registers": i.registers,
                }
                for i in infos
            ]
        )
        return
    from rich.table import Table

    from awm_core.console import make_console

    table = Table(title="awm plugins")
    for col in ("name", "package", "version", "origin", "hooks", "registers"):
        table.add_column(col)
    for i in infos:
        regs = "; ".join(f"{k}: {', '.join(v)}" for k, v in i.registers.items() if v)
        table.add_row(i.name, i.package or "", i.version or "", i.origin, "\n".join(i.hooks), regs)
    make_console().print(table)


@cli.command(name="schema")
@click.argument("name", required=False)
@click.option("--list", "list_names", is_flag=True, help="List the schema names.")
def schema_command(name: str | None, list_names: bool) -> None:
    """Print the versioned JSON Schema of a boundary model (task, trajectory, ...)."""
    from awm_core.schemas import json_schema, schema_names

    if list_names or name is None:
        for n in schema_names():
            click.echo(n)
        return
    emit_json(json_schema(name))


_commands_added = False


def build_cli() -> click.Group:
    """Load plugins and let each add its commands; returns the root group."""
    global _commands_added
    load_plugins()
    if not _commands_added:
        _commands_added = True
        # One plugin at a time, so a broken plugin is named instead of a bare traceback.
        for impl in pm.hook.register_commands.get_hookimpls():
            try:
                impl.function(cli=cli)
            except Exception as exc:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} failed to add its commands: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
    return cli


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``awm`` script: typed errors become a one-line message, exit 2."""
    try:
        root = build_cli()
        root.main(args=argv, prog_name="awm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except AWMError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as exc:
        # a path the user gave is wrong: say which, without a traceback
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
