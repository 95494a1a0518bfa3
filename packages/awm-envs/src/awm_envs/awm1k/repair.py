"""Repairs for the release's known defects in SQL and tool code, and their undoing on export.

``\\'`` in INSERT statements (not SQL), and tool code built around a module-level
``create_engine(...)``, ``SessionLocal()`` inside each endpoint and
``uvicorn.run`` at the bottom. Wall-clock reads are frozen by
:func:`awm_envs.bundle.timefreeze.freeze_now`.

An imported ``app.py`` stays self-contained: the session shim (``SessionLocal()``
bound to the calling awm instance) is written into it as a marked block of
standard-library code, which :func:`strip_session_shim` removes again on export.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from awm_envs.bundle.parens import matching_paren, paren_balance


def fix_escaped_quotes(sql: str) -> str:
    """``\\'`` inside an SQL literal is the LLM's habit, not SQL: double the quote instead."""
    return sql.replace("\\'", "''").replace('\\"', '"')


def replace_calls(
    code: str,
    name: str,
    replacement: Callable[[str], str],
    keep: Callable[[int], bool] | None = None,
) -> str:
    """Replace each ``name(...)`` call (parentheses balanced, strings respected).

    ``keep(offset)`` (optional) leaves the call starting at ``offset`` as it is.
    """
    out, pos = [], 0
    pattern = re.compile(rf"\b{re.escape(name)}\(")
    while (m := pattern.search(code, pos)) is not None:
        close = matching_paren(code, m.end() - 1, backslash=True)
        i = close if close != -1 else len(code)
        out.append(code[pos : m.start()])
        call = code[m.start() : i + 1]
        out.append(call if keep is not None and keep(m.start()) else replacement(call))
        pos = i + 1
    out.append(code[pos:])
    return "".join(out)


IN_MEMORY_ENGINE = 'create_engine("sqlite://", connect_args={"check_same_thread": False})'

SHIM_BEGIN = "# --- awm envs import-awm: session shim, begin (export-awm removes this block) ---"
SHIM_END = "# --- awm envs import-awm: session shim, end ---"

# Inlined into every imported app.py: standard library only, so the app imports no awm code.
SESSION_SHIM = f'''{SHIM_BEGIN}
# The official code opens SessionLocal() in every endpoint. Under the awm runtime, which
# overrides get_db, SessionLocal() returns the calling instance's session (the endpoint
# may close() it without ending the instance's transaction, so instances stay isolated
# and a rejected call rolls back); run on its own, the app keeps its own session factory.
def _awm_session_shim(app, session_factory, get_db):
    if get_db is None:

        def get_db():
            if session_factory is None:
                raise RuntimeError("this app defines neither get_db nor SessionLocal")
            db = session_factory()
            try:
                yield db
            finally:
                db.close()

    class BorrowedSession:
        def __init__(self, session):
            object.__setattr__(self, "_session", session)

        def __getattr__(self, name):
            return getattr(self._session, name)

        def __setattr__(self, name, value):
            setattr(self._session, name, value)

        def close(self):
            """The runtime owns the session's lifetime; closing here would drop its work."""

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

    def session_local():
        override = app.dependency_overrides.get(get_db)
        if override is not None:
            return BorrowedSession(override())
        if session_factory is None:
            raise RuntimeError("SessionLocal is only available under the awm runtime")
        return session_factory()

    return get_db, session_local


get_db, SessionLocal = _awm_session_shim(
    app, globals().get("SessionLocal"), globals().get("get_db")
)
del _awm_session_shim
{SHIM_END}
'''

_SHIM_BLOCK = re.compile(
    rf"^{re.escape(SHIM_BEGIN[:40])}.*?^{re.escape(SHIM_END)}\n?\n?\n?", re.MULTILINE | re.DOTALL
)

# What imports before the shim was inlined appended (it imported awm at run time); its
# `uvicorn.run(...)` calls became `None`. Recognised on export and undone.
LEGACY_SHIM = """

# --- added by `awm envs import-awm`: sessions are bound to the calling awm instance ---
from awm_envs.awm1k.compat import install_session_shim as _awm_install_session_shim  # noqa: E402

get_db, SessionLocal = _awm_install_session_shim(
    app, globals().get("SessionLocal"), globals().get("get_db")
)
"""


def _main_guards(code: str) -> list[tuple[int, int]] | None:
    """Line spans (first, last; 1-based) of the top-level ``if __name__ == "__main__":``
    blocks, or None when the code does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in tree.body
        if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)
    ]


def _line_of(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def strip_session_shim(code: str) -> tuple[str, bool]:
    """``code`` without the blocks import added (the inlined shim, or the legacy import of
    awm's shim); True when a legacy block was removed (its ``uvicorn.run`` became ``None``)."""
    code = _SHIM_BLOCK.sub("", code)
    legacy = False
    while LEGACY_SHIM.strip() in code:  # stacked by repeated legacy round trips
        legacy = True
        at = code.index(LEGACY_SHIM.strip())
        code = code[:at].rstrip() + "\n" + code[at + len(LEGACY_SHIM.strip()) :].lstrip("\n")
    if legacy:
        code = code.rstrip() + "\n"
    return code, legacy


def restore_legacy_main(code: str) -> str:
    """In a legacy import, the ``None`` left where the ``__main__`` block called
    ``uvicorn.run(...)`` becomes ``uvicorn.run(app)`` again (the official patcher replaces
    that line with its own start-up code)."""
    guards = _main_guards(code)
    if not guards:
        return code
    lines = code.split("\n")
    for first, last in guards:
        for i in range(first, min(last, len(lines))):
            if lines[i].strip() == "None":
                indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
                lines[i] = f"{indent}uvicorn.run(app)"
    return "\n".join(lines)


def rewrite_app(code: str) -> str:
    """Make official tool code importable as a self-contained bundle app.py.

    The engine is pointed at a private in-memory database (nothing touches the file
    system at import); a ``uvicorn.run`` outside the ``__main__`` block becomes ``None``
    (the one inside never runs on import, and stays for the export); the session shim is
    written in before the ``__main__`` block (at the end without one). Idempotent: a shim
    already there is replaced, never stacked.
    """
    code, legacy = strip_session_shim(code)
    if legacy:
        code = restore_legacy_main(code)
    code = replace_calls(code, "create_engine", lambda _: IN_MEMORY_ENGINE)
    guards = _main_guards(code)
    spans = guards or []

    def guarded(offset: int) -> bool:
        line = _line_of(code, offset)
        return any(first <= line <= last for first, last in spans)

    code = replace_calls(code, "uvicorn.run", lambda _: "None", keep=guarded)
    if guards:
        lines = code.splitlines(keepends=True)
        at = guards[0][0] - 1
        return "".join(lines[:at]) + SESSION_SHIM + "\n\n" + "".join(lines[at:])
    return code.rstrip() + "\n\n\n" + SESSION_SHIM


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
