"""Command groups whose sub-commands are imported only when they run.

``awm --help`` lists every plugin's commands; importing each command's module
to do so (FastAPI, SQLAlchemy, torch behind them) cost seconds. A plugin adds a
command by where it lives instead::

    @hookimpl
    def register_commands(cli):
        cli.add_lazy_command("verify", "awm_verify.cli:verify_group", "Verify episodes: ...")

The help line is given up front, so listing commands imports nothing; the
module is imported when the command (or its own ``--help``) is used. Plain
``cli.add_command(cmd)`` keeps working for plugins that do not care.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import click

from awm_core.errors import PluginError

__all__ = ["LazyGroup", "add_lazy"]


@dataclass(frozen=True)
class _Lazy:
    target: str  # "package.module:attribute"
    short_help: str


class LazyGroup(click.Group):
    """A :class:`click.Group` that also holds commands by import path (see the module docstring)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._lazy: dict[str, _Lazy] = {}

    def add_lazy_command(self, name: str, target: str, short_help: str) -> None:
        """Add the command found at ``target`` (``"module:attr"``) under ``name``, imported on use."""
        if ":" not in target:
            raise ValueError(f"lazy command target {target!r} must look like 'module:attribute'")
        self._lazy[name] = _Lazy(target, short_help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        lazy = self._lazy.get(cmd_name)
        if lazy is None:
            return None
        module_name, _, attr = lazy.target.partition(":")
        try:
            command = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            path = f"{ctx.command_path} {cmd_name}".strip()
            raise PluginError(
                f"the command {path!r} could not be loaded from {lazy.target}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(command, click.Command):
            raise PluginError(f"{lazy.target} is not a click command")
        self.commands[cmd_name] = command  # imported once; later lookups are plain
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``: lazy commands show their given line, unimported."""
        rows: list[tuple[str, str]] = []
        limit = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        for name in self.list_commands(ctx):
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(limit)))
            else:
                rows.append((name, self._lazy[name].short_help))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def add_lazy(group: click.Group, name: str, target: str, short_help: str) -> None:
    """``group.add_lazy_command(...)``, or on a plain :class:`click.Group` an import and add now."""
    if isinstance(group, LazyGroup):
        group.add_lazy_command(name, target, short_help)
        return
    module_name, _, attr = target.partition(":")
    group.add_command(getattr(importlib.import_module(module_name), attr), name)
