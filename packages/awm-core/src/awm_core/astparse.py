"""``ast.parse`` that is safe to call from several threads at once.

CPython 3.11's AST-to-object conversion keeps its recursion depth in
interpreter-wide state; when a garbage collection during one parse runs Python
code that lets another thread parse too, the counter is corrupted
("SystemError: AST constructor recursion depth mismatch", seen in CI while
awm-synth checked verifiers from several threads). It is rare and not
reproducible on demand, so there is no test that forces it; every parse of
generated code in awm goes through this one lock instead.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)`` under a process-wide lock."""
    with _LOCK:
        return ast.parse(source, filename=filename)
