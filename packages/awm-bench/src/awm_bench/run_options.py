"""The options that say where a resumable bench run writes, shared by its commands.

``awm bench tasks`` and ``awm bench safety`` keep a run in ``RESULTS/RUN/KIND/MODEL`` (or
``--out``) and resume it under the same name or folder; one decorator keeps their flags,
defaults and help identical.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def run_folder_options(kind: str) -> Callable[[F], F]:
    """``--run``, ``--results`` and ``--out`` for a command whose runs go under ``kind``."""

    def decorate(command: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--run", "run_name", default=None, help="Run name (the same name resumes it)."
                ),
                click.option(
                    "--results",
                    type=click.Path(file_okay=False, path_type=Path),
                    default=Path("bench-results"),
                    show_default=True,
                    help="Folder of runs.",
                ),
                click.option(
                    "--out",
                    type=click.Path(file_okay=False, path_type=Path),
                    default=None,
                    help=f"Write here instead of RESULTS/RUN/{kind}/MODEL (the same folder resumes).",
                ),
            )
        ):
            command = option(command)
        return command

    return decorate
