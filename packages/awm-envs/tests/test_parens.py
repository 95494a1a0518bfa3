"""The one parenthesis scanner: quotes skipped, SQL and Python escapes."""

from __future__ import annotations

from awm_envs.bundle.parens import matching_paren, paren_balance


def test_matching_paren_skips_parentheses_inside_strings() -> None:
    sql = "datetime('now', ')') || x"
    assert matching_paren(sql, sql.index("(")) == sql.index("||") - 2


def test_a_doubled_sql_quote_needs_no_escape_rule() -> None:
    sql = "f('it''s (not) a paren')"
    assert matching_paren(sql, 1) == len(sql) - 1


def test_python_backslash_escapes_are_honoured_on_request() -> None:
    code = r"create_engine('a\'(b') + 1"
    assert matching_paren(code, code.index("("), backslash=True) == code.index(" +") - 1


def test_an_unclosed_paren_has_no_match() -> None:
    assert matching_paren("f(a, (b)", 1) == -1


def test_balance_counts_outside_quotes_and_backquoted_identifiers() -> None:
    assert paren_balance("CREATE TABLE `t(` (a INT, b TEXT DEFAULT ')'") == 1
    assert paren_balance("(a))") == -1
