"""The rich console every awm command prints through.

Rich sizes its output to the terminal; when stdout is a pipe (CI logs,
``| less``, ``> file``) it assumes 80 columns and squeezes tables into
``healthc…`` cells. Here a console that is not a terminal gets
:data:`PIPE_WIDTH` columns (or ``$COLUMNS`` when set), so piped tables keep
their ids whole, and ``--json`` stays the way to get machine-readable output.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

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


class LineProgress:
    """``progress(label, done, total)`` for long runs, readable in a terminal and in a log.

    On a terminal one line per label is redrawn in place; elsewhere (CI, ``nohup``,
    ``| tee``) a line is printed at every tenth of the way and at least every
    ``every_s`` seconds while work is under way, so a log is never silent for longer,
    even when one case takes minutes. Each line gives the count, the rate and the ETA.
    Call :meth:`close` (or use it as a context manager) to stop the heartbeat.
    """

    def __init__(self, *, every_s: float = 10.0, stream: TextIO | None = None) -> None:
        self.every_s = every_s
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty()
        self._lock = threading.Lock()
        self._state: dict[str, tuple[int, int, float]] = {}  # label -> done, total, started
        self._printed: dict[str, tuple[int, float]] = {}  # label -> done, when
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __call__(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        with self._lock:
            started = self._state.get(label, (0, 0, now))[2]
            self._state[label] = (done, total, started)
            last_done, last_when = self._printed.get(label, (0, started))
            step = max(1, total // 10)
            due = done >= total or done - last_done >= step or now - last_when >= self.every_s
            if self.terminal or due:
                self._write(label, now)
            if self._beat is None and not self.terminal:
                self._beat = threading.Thread(target=self._heartbeat, daemon=True)
                self._beat.start()

    def _line(self, label: str, now: float) -> str:
        done, total, started = self._state[label]
        elapsed = max(now - started, 1e-9)
        rate = done / elapsed
        eta = f"ETA {(total - done) / rate:.0f} s" if 0 < done < total else ""
        width = 24
        bar = "#" * int(width * done / max(total, 1))
        return (
            f"{label:<18} [{bar:<{width}}] {done}/{total}  {rate:.2f}/s  "
            f"{elapsed:.0f} s {eta}".rstrip()
        )

    def _write(self, label: str, now: float) -> None:
        done, total, _ = self._state[label]
        line = self._line(label, now)
        if self.terminal:
            end = "\n" if done >= total else ""
            self.stream.write("\r\x1b[2K" + line + end)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._printed[label] = (done, now)

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(1.0, self.every_s)):
            now = time.monotonic()
            with self._lock:
                for label, (done, total, _) in self._state.items():
                    if done < total and now - self._printed.get(label, (0, 0.0))[1] >= self.every_s:
                        self._write(label, now)

    def close(self) -> None:
        """Stop the heartbeat (finished labels print nothing more)."""
        self._stop.set()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_callback(*, every_s: float = 10.0) -> LineProgress:
    """The progress reporter long commands hand to their runners (see :class:`LineProgress`)."""
    return LineProgress(every_s=every_s)
