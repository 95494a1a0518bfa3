"""Freezing clock reads in generated SQL to the run's reference time."""

from __future__ import annotations

from datetime import datetime

from awm_envs import freeze_now
from awm_synth.stages.data import parse_seed

REF = datetime(2025, 3, 15, 9, 0, 0)


def test_datetime_now_with_modifier_becomes_a_literal() -> None:
    out = freeze_now("INSERT INTO t VALUES (1, datetime('now', '-3 days'));", REF)
    assert out.sql == "INSERT INTO t VALUES (1, '2025-03-12 09:00:00');"
    assert out.rewrites == [("datetime('now', '-3 days')", "'2025-03-12 09:00:00'")]


def test_every_clock_form_is_frozen() -> None:
    sql = "SELECT date('now'), julianday('NOW'), strftime('%Y', 'now'), CURRENT_TIMESTAMP, CURRENT_DATE;"
    out = freeze_now(sql, REF)
    assert "now" not in out.sql.lower() and "CURRENT_" not in out.sql
    assert "'2025-03-15'" in out.sql and "'2025'" in out.sql and "'2025-03-15 09:00:00'" in out.sql


def test_text_that_mentions_now_is_untouched() -> None:
    sql = "INSERT INTO notes VALUES ('call datetime(''now'') later', 'CURRENT_DATE is a keyword');"
    assert freeze_now(sql, REF).sql == sql


def test_fixed_dates_are_untouched() -> None:
    sql = "INSERT INTO t VALUES (datetime('2025-01-01', '+1 day'));"
    out = freeze_now(sql, REF)
    assert out.sql == sql and not out.rewrites


def test_seed_stage_records_what_it_froze() -> None:
    seed = parse_seed("INSERT INTO t (a) VALUES (datetime('now', '-1 days'));", REF)
    assert seed.inserts == ["INSERT INTO t (a) VALUES ('2025-03-14 09:00:00');"]
    assert len(seed.frozen) == 1
