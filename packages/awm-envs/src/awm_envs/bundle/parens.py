"""Parentheses in source text, counted outside quoted strings: one scanner for SQL and Python.

SQL doubles a quote to escape it (``'it''s'``); read as closing and reopening
the string, that gives the same depths, so SQL needs no escape rule. Python
escapes with a backslash, which ``backslash=True`` honours.
"""

from __future__ import annotations

from collections.abc import Iterator


def paren_depths(
    text: str, start: int = 0, *, quotes: str = "'\"", backslash: bool = False
) -> Iterator[tuple[int, int]]:
    """``(index, depth after it)`` for each parenthesis of ``text[start:]`` outside ``quotes``."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if backslash and ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in quotes:
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
            yield i, depth
        i += 1


def matching_paren(
    text: str, open_index: int, *, quotes: str = "'\"", backslash: bool = False
) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_index``, or -1 when it is never closed."""
    for i, depth in paren_depths(text, open_index, quotes=quotes, backslash=backslash):
        if depth == 0:
            return i
    return -1


def paren_balance(text: str, *, quotes: str = "'\"`") -> int:
    """``(`` minus ``)`` outside quoted strings (and, by default, backquoted SQL identifiers)."""
    depth = 0
    for _, after in paren_depths(text, quotes=quotes):
        depth = after
    return depth
