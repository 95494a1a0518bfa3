"""Long runs are never silent in a log: count, rate and ETA, and a heartbeat between cases."""

from __future__ import annotations

import io
import time

from awm_core.console import LineProgress
from awm_core.testing import wait_until


def test_a_log_gets_count_rate_eta_and_a_heartbeat_while_a_case_runs() -> None:
    stream = io.StringIO()  # not a terminal: whole lines, one per report
    with LineProgress(every_s=0.2, stream=stream) as progress:
        progress("bench", 1, 10)
        first = stream.getvalue().splitlines()
        assert len(first) == 1 and "1/10" in first[0] and "/s" in first[0] and "ETA" in first[0]
        # nothing finishes for a while: the heartbeat repeats the line
        wait_until(lambda: len(stream.getvalue().splitlines()) >= 3, timeout=30, what="beats")
        progress("bench", 10, 10)
    lines = stream.getvalue().splitlines()
    assert "10/10" in lines[-1] and "ETA" not in lines[-1]
    count = len(lines)
    time.sleep(0.6)  # three heartbeat periods
    assert len(stream.getvalue().splitlines()) == count  # finished: no more beats


def test_a_log_gets_a_line_per_tenth_not_per_case() -> None:
    stream = io.StringIO()
    with LineProgress(every_s=3600, stream=stream) as progress:
        for done in range(1, 101):
            progress("cases", done, 100)
    assert len(stream.getvalue().splitlines()) == 10


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_line_redrawn_in_place() -> None:
    stream = _Tty()
    with LineProgress(stream=stream) as progress:
        for done in range(1, 4):
            progress("cases", done, 3)
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.count("\n") == 1
    assert "3/3" in text.rsplit("\r", 1)[1] and text.endswith("\n")
