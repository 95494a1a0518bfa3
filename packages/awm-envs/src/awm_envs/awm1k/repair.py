"""Repairs for the release's known defects in SQL and tool code.

``\\'`` in INSERT statements (not SQL), and tool code built around a module-level
``create_engine(...)``, ``SessionLocal()`` inside each endpoint and
``uvicorn.run`` at the bottom (see :mod:`awm_envs.awm1k.compat`). Wall-clock
reads are frozen by :func:`awm_envs.bundle.timefreeze.freeze_now`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from awm_envs.bundle.parens import matching_paren, paren_balance


def fix_escaped_quotes(sql: str) -> str:
    """``\\'`` inside an SQL literal is the LLM's habit, not SQL: double the quote instead."""
    return sql.replace("\\'", "''").replace('\\"', '"')


def replace_calls(code: str, name: str, replacement: Callable[[str], str]) -> str:
    """Replace each ``name(...)`` call (parentheses balanced, strings respected)."""
    out, pos = [], 0
    pattern = re.compile(rf"\b{re.escape(name)}\(")
    while (m := pattern.search(code, pos)) is not None:
        close = matching_paren(code, m.end() - 1, backslash=True)
        i = close if close != -1 else len(code)
        out.append(code[pos : m.start()])
        out.append(replacement(code[m.start() : i + 1]))
        pos = i + 1
    out.append(code[pos:])
    return "".join(out)


SHIM = """

# --- added by `awm envs import-awm`: sessions are bound to the calling awm instance ---
from awm_envs.awm1k.compat import install_session_shim as _awm_install_session_shim  # noqa: E402

get_db, SessionLocal = _awm_install_session_shim(
    app, globals().get("SessionLocal"), globals().get("get_db")
)
"""


def rewrite_app(code: str) -> str:
    """Make official tool code importable as a bundle's app.py.

    The engine is pointed at a private in-memory database (nothing touches the
    file system at import), ``uvicorn.run`` calls are removed, and the session
    shim is appended.
    """
    code = replace_calls(
        code,
        "create_engine",
        lambda _: 'create_engine("sqlite://", connect_args={"check_same_thread": False})',
    )
    code = replace_calls(code, "uvicorn.run", lambda _: "None")
    return code.rstrip() + "\n" + SHIM


def repair_parens(ddl: str, accepts: Callable[[str], bool]) -> str | None:
    """A DDL statement with one unbalanced parenthesis fixed, or None.

    Only where it is unambiguous: one ``)`` missing at the end (appended) or one
    ``)`` too many at the end (dropped), and the repaired statement is accepted by
    ``accepts`` (it executes on the schema so far). Anything else stays broken.
    """
    text = ddl.rstrip().rstrip(";").rstrip()
    balance = paren_balance(text)
    if balance == 1:
        candidate = text + ")"
    elif balance == -1 and text.endswith(")"):
        candidate = text[:-1].rstrip()
    else:
        return None
    return candidate if paren_balance(candidate) == 0 and accepts(candidate) else None
