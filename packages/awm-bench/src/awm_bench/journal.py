"""A benchmark run's resumable journal: one JSON row per finished case, appended as it finishes.

Every runner (BFCL, τ², MCP-Universe, awm's own tasks) writes ``MODE.jsonl`` through
:class:`Journal`: a row is appended (and flushed) the moment its case is done, a
killed run started again skips the cases already in the file, and progress is
reported as ``progress(label, done, total)`` over the run's cases. A line cut
short when a run was killed is skipped on reading, so that case simply runs again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from awm_core.contracts import Progress

__all__ = ["Journal", "read_rows"]


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file that a run appends to, skipping a line cut short
    when the run was killed (nothing if the file does not exist yet)."""
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


class Journal:
    """The rows of one mode of one run, keyed by ``row[key]`` (a case id).

    ``keys`` are the run's cases in order; ``label`` and ``progress`` report each
    new row as ``progress(label, cases done, cases in the run)``.
    """

    def __init__(
        self,
        path: Path,
        key: str,
        keys: Iterable[str],
        *,
        label: str = "",
        progress: Progress | None = None,
    ) -> None:
        self.path = path
        self.key = key
        self.keys = list(keys)
        self.label = label
        self.progress = progress
        self.done: dict[str, dict[str, Any]] = {
            str(row[key]): row for row in read_rows(path) if key in row
        }
        self._finished = sum(k in self.done for k in self.keys)
        # a run killed mid-write leaves a line without its newline: the next row starts afresh
        written = path.read_bytes() if path.exists() else b""
        self._cut_short = bool(written) and not written.endswith(b"\n")

    def __contains__(self, case: str) -> bool:
        return case in self.done

    def todo(self) -> list[str]:
        """The run's cases without a row yet, in order."""
        return [k for k in self.keys if k not in self.done]

    def add(self, row: dict[str, Any]) -> None:
        """Append ``row`` (a finished case) to the file and report progress."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(("\n" if self._cut_short else "") + json.dumps(row, default=str) + "\n")
        self._cut_short = False
        case = str(row[self.key])
        if case not in self.done and case in self.keys:
            self._finished += 1
        self.done[case] = row
        if self.progress is not None:
            self.progress(self.label, self._finished, len(self.keys))

    def rows(self) -> list[dict[str, Any]]:
        """The rows of the run's cases, in the run's order (cases not done yet left out)."""
        return [self.done[k] for k in self.keys if k in self.done]
