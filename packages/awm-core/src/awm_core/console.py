"""The rich console every awm command prints through.

Rich sizes its output to the terminal; when stdout is a pipe (CI logs,
``| less``, ``> file``) it assumes 80 columns and squeezes tables into
``healthc…`` cells. Here a console that is not a terminal gets
:data:`PIPE_WIDTH` columns (or ``$COLUMNS`` when set), so piped tables keep
their ids whole, and ``--json`` stays the way to get machine-readable output.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

PIPE_WIDTH = 200


def pipe_width() -> int:
    """Columns to lay out for when the output is not a terminal."""
    raw = os.environ.get("COLUMNS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else PIPE_WIDTH


def make_console(*, stderr: bool = False) -> Console:
    """A rich console: the terminal's width on a terminal, :func:`pipe_width` otherwise."""
    from rich.console import Console

    console = Console(stderr=stderr)
    if not console.is_terminal:
        console = Console(stderr=stderr, width=pipe_width())
    return console


def progress_bars() -> Progress:
    """Progress bars on stderr that vanish when done, so stdout keeps the table or the JSON.

    Each row reads ``description [bar] done/total last``: add tasks with a ``last``
    field (``add_task("judge", total=n, last="")``) and update it as items finish.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[last]}"),
        console=make_console(stderr=True),
        transient=True,
    )
