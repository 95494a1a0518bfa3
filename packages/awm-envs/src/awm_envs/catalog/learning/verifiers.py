"""Verifiers for the learning environment's tasks (awm native signature).

Each verifier compares the initial and final databases: the intended change
must be there and nothing else may differ. Answer-judged tasks compare the
final answer with facts read from the database.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

LEARNER = 1
EMPTY: dict[str, list[Any]] = {"added": [], "removed": [], "changed": []}
REFUSAL_WORDS = (
    "can't",
    "cannot",
    "can not",
    "unable",
    "not possible",
    "no longer",
    "not able",
    "won't",
    "impossible",
    "not allowed",
)


# --------------------------------------------------------------------------- helpers


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
    )
    return sorted(r[0] for r in rows)


def _rows(conn: sqlite3.Connection, table: str) -> dict[int, dict[str, Any]]:
    cur = conn.execute(f'SELECT rowid AS _rowid_, * FROM "{table}"')
    cols = [c[0] for c in cur.description]
    return {r[0]: dict(zip(cols[1:], r[1:], strict=True)) for r in cur}


def _diff(
    initial: sqlite3.Connection, final: sqlite3.Connection
) -> dict[str, dict[str, list[Any]]]:
    """Per table: rows added, removed, and changed ((before, after) pairs), keyed by rowid."""
    out: dict[str, dict[str, list[Any]]] = {}
    for table in sorted(set(_tables(initial)) | set(_tables(final))):
        a = _rows(initial, table) if table in _tables(initial) else {}
        b = _rows(final, table) if table in _tables(final) else {}
        added = [b[k] for k in sorted(b.keys() - a.keys())]
        removed = [a[k] for k in sorted(a.keys() - b.keys())]
        changed = [(a[k], b[k]) for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]
        if added or removed or changed:
            out[table] = {"added": added, "removed": removed, "changed": changed}
    return out


def _part(diff: dict[str, Any], table: str) -> dict[str, list[Any]]:
    return diff.get(table, EMPTY)


def _unexpected(diff: dict[str, Any], allowed: set[str]) -> list[str]:
    return sorted(t for t in diff if t not in allowed)


def _changed_cols(before: dict[str, Any], after: dict[str, Any]) -> set[str]:
    return {k for k in before if before[k] != after.get(k)}


def _norm(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower()).rstrip(".!")


def _numbers(text: str | None) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text or "")]


def _mentions_int(text: str | None, value: int) -> bool:
    return any(n == value for n in _numbers(text))


def _refuses(text: str | None) -> bool:
    answer = (text or "").lower().replace("\u2019", "'")
    return any(w in answer for w in REFUSAL_WORDS)


def _result(ok: bool, **evidence: Any) -> dict[str, Any]:
    return {"complete": bool(ok), "evidence": evidence}


def _course_id(conn: sqlite3.Connection, code: str) -> int:
    return conn.execute("SELECT course_id FROM courses WHERE code = ?", (code,)).fetchone()[0]


def _enrollment(conn: sqlite3.Connection, course_id: int) -> dict[str, Any] | None:
    cur = conn.execute(
        "SELECT * FROM enrollments WHERE user_id = ? AND course_id = ?", (LEARNER, course_id)
    )
    row = cur.fetchone()
    return dict(zip([c[0] for c in cur.description], row, strict=True)) if row else None


def _quiz_id(conn: sqlite3.Connection, course_id: int, position: int) -> int:
    return conn.execute(
        "SELECT q.quiz_id FROM quizzes q JOIN modules m ON m.module_id = q.module_id "
        "WHERE m.course_id = ? AND m.position = ?",
        (course_id, position),
    ).fetchone()[0]


def _missing_lessons(conn: sqlite3.Connection, enrollment_id: int, course_id: int) -> set[int]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT l.lesson_id FROM lessons l JOIN modules m ON m.module_id = l.module_id "
            "WHERE m.course_id = ? AND l.lesson_id NOT IN "
            "(SELECT lesson_id FROM lesson_completions WHERE enrollment_id = ?)",
            (course_id, enrollment_id),
        )
    }


def _enrollment_changes(diff: dict[str, Any]) -> dict[int, tuple[str, str]] | None:
    """course_id -> (old status, new status) for the learner's changed enrollments; None if
    anything else happened to the enrollments table."""
    part = _part(diff, "enrollments")
    if part["removed"]:
        return None
    out: dict[int, tuple[str, str]] = {}
    for a, b in part["changed"]:
        if a["user_id"] != LEARNER or _changed_cols(a, b) - {
            "status",
            "enrolled_at",
            "completed_at",
        }:
            return None
        out[a["course_id"]] = (a["status"], b["status"])
    for b in part["added"]:
        if b["user_id"] != LEARNER:
            return None
        out[b["course_id"]] = ("", b["status"])
    return out


def _finished_course(
    initial: sqlite3.Connection, diff: dict[str, Any], code: str, answers: dict[int, str]
) -> tuple[bool, dict[str, Any]]:
    """The learner completed every missing lesson, passed the named quizzes (module position ->
    answers) with one new attempt each, and got the certificate for course `code`."""
    course = _course_id(initial, code)
    e = _enrollment(initial, course)
    assert e is not None
    eid = e["enrollment_id"]
    lessons = _part(diff, "lesson_completions")
    lessons_ok = (
        not lessons["removed"]
        and not lessons["changed"]
        and sorted(x["lesson_id"] for x in lessons["added"])
        == sorted(_missing_lessons(initial, eid, course))
        and all(x["enrollment_id"] == eid for x in lessons["added"])
    )
    attempts = _part(diff, "quiz_attempts")
    made = sorted((x["quiz_id"], x["answers"], x["passed"]) for x in attempts["added"])
    expected = sorted((_quiz_id(initial, course, pos), a, 1) for pos, a in answers.items())
    attempts_ok = (
        not attempts["removed"]
        and not attempts["changed"]
        and made == expected
        and all(x["enrollment_id"] == eid for x in attempts["added"])
    )
    certs = _part(diff, "certificates")
    cert_ok = (
        not certs["removed"]
        and not certs["changed"]
        and len(certs["added"]) == 1
        and certs["added"][0]["enrollment_id"] == eid
    )
    enroll_ok = _enrollment_changes(diff) == {course: ("active", "completed")}
    return lessons_ok and attempts_ok and cert_ok and enroll_ok, {
        "lessons_ok": lessons_ok,
        "attempts": made,
        "expected_attempts": expected,
        "certificate_ok": cert_ok,
        "enrollment_ok": enroll_ok,
    }


# --------------------------------------------------------------------------- tasks


def verify_flask_quiz_attempts_left(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    course = _course_id(initial, "FLK-210")
    eid = _enrollment(initial, course)["enrollment_id"]
    quiz = _quiz_id(initial, course, 2)
    used, best = initial.execute(
        "SELECT COUNT(*), MAX(score_pct) FROM quiz_attempts WHERE enrollment_id = ? AND quiz_id = ?",
        (eid, quiz),
    ).fetchone()
    left = 3 - used
    ok_left = _mentions_int(final_answer, left) or (left == 1 and "one" in _norm(final_answer))
    ok_best = _mentions_int(final_answer, best)
    return _result(
        not diff and ok_left and ok_best,
        changed_tables=sorted(diff),
        attempts_left=left,
        best_score=best,
        answer_has_left=ok_left,
        answer_has_best=ok_best,
    )


def verify_enroll_marco_photography(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    target = initial.execute(
        "SELECT c.course_id FROM courses c JOIN instructors i ON i.instructor_id = c.instructor_id "
        "WHERE c.title = 'Photography Basics' AND i.name = 'Marco Silva'"
    ).fetchone()[0]
    changes = _enrollment_changes(diff)
    return _result(
        not _unexpected(diff, {"enrollments"}) and changes == {target: ("", "active")},
        unexpected_tables=_unexpected(diff, {"enrollments"}),
        enrollment_changes=changes,
        target_course=target,
    )


def verify_fix_my_reviews(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"reviews"})
    excel, uxd = _course_id(initial, "XLS-110"), _course_id(initial, "UXD-101")
    part = _part(diff, "reviews")
    removed = [(r["course_id"], r["user_id"]) for r in part["removed"]]
    changed_ok = (
        len(part["changed"]) == 1
        and part["changed"][0][0]["course_id"] == excel
        and part["changed"][0][0]["user_id"] == LEARNER
        and _changed_cols(*part["changed"][0]) <= {"rating", "comment", "updated_at"}
        and part["changed"][0][1]["rating"] == 2
        and _norm(part["changed"][0][1]["comment"])
        == "the pivot table module was confusing and the quiz too strict"
    )
    return _result(
        not extra and not part["added"] and removed == [(uxd, LEARNER)] and changed_ok,
        unexpected_tables=extra,
        removed=removed,
        excel_review_updated=changed_ok,
    )


def verify_progress_overview(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    best_title, best_pct, remaining = "", -1.0, 0
    for course_id, eid, title in initial.execute(
        "SELECT e.course_id, e.enrollment_id, c.title FROM enrollments e "
        "JOIN courses c ON c.course_id = e.course_id WHERE e.user_id = ? AND e.status = 'active'",
        (LEARNER,),
    ).fetchall():
        total = initial.execute(
            "SELECT COUNT(*) FROM lessons l JOIN modules m ON m.module_id = l.module_id "
            "WHERE m.course_id = ?",
            (course_id,),
        ).fetchone()[0]
        missing = len(_missing_lessons(initial, eid, course_id))
        remaining += missing
        pct = (total - missing) / total
        if pct > best_pct:
            best_title, best_pct = title, pct
    answer = _norm(final_answer)
    ok_course = best_title.lower() in answer or "sql-201" in answer
    ok_remaining = _mentions_int(final_answer, remaining)
    return _result(
        not diff and ok_course and ok_remaining,
        changed_tables=sorted(diff),
        furthest=best_title,
        lessons_remaining=remaining,
        answer_has_course=ok_course,
        answer_has_remaining=ok_remaining,
    )


def verify_refuse_exhausted_quiz(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    course = _course_id(initial, "XLS-110")
    eid = _enrollment(initial, course)["enrollment_id"]
    used = initial.execute(
        "SELECT COUNT(*) FROM quiz_attempts WHERE enrollment_id = ? AND quiz_id = ?",
        (eid, _quiz_id(initial, course, 2)),
    ).fetchone()[0]
    answer = _norm(final_answer)
    why = "attempt" in answer
    return _result(
        not diff and used >= 3 and _refuses(final_answer) and why,
        changed_tables=sorted(diff),
        attempts_used=used,
        answer_refuses=_refuses(final_answer),
        answer_mentions_attempts=why,
    )


def verify_finish_sql_course(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(
        diff, {"lesson_completions", "quiz_attempts", "certificates", "enrollments"}
    )
    ok, evidence = _finished_course(initial, diff, "SQL-201", {3: "B,D,A,C,B"})
    return _result(not extra and ok, unexpected_tables=extra, **evidence)


def verify_october_data_courses(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"enrollments"})
    open_october = {
        r[0]
        for r in initial.execute(
            "SELECT c.course_id FROM courses c WHERE c.category = 'data' AND c.level = 'beginner' "
            "AND c.status = 'published' AND c.starts_on BETWEEN '2025-10-01' AND '2025-10-31' "
            "AND c.enroll_deadline >= '2025-09-15' AND c.capacity > (SELECT COUNT(*) FROM enrollments e "
            "WHERE e.course_id = c.course_id AND e.status IN ('active', 'completed'))"
        )
    }
    expected = {c: ("", "active") for c in open_october}
    expected[_course_id(initial, "MLF-301")] = ("waitlisted", "dropped")
    changes = _enrollment_changes(diff)
    return _result(
        not extra and changes == expected,
        unexpected_tables=extra,
        enrollment_changes=changes,
        expected={str(k): v for k, v in expected.items()},
    )


def verify_finish_flask_and_review(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(
        diff, {"lesson_completions", "quiz_attempts", "certificates", "enrollments", "reviews"}
    )
    ok, evidence = _finished_course(initial, diff, "FLK-210", {2: "C,A,B,B,D", 3: "A,D,C,B,C"})
    reviews = _part(diff, "reviews")
    review_ok = (
        not reviews["removed"]
        and not reviews["changed"]
        and len(reviews["added"]) == 1
        and reviews["added"][0]["course_id"] == _course_id(initial, "FLK-210")
        and reviews["added"][0]["user_id"] == LEARNER
        and reviews["added"][0]["rating"] == 5
        and _norm(reviews["added"][0]["comment"]) == "great hands-on projects"
    )
    return _result(
        not extra and ok and review_ok, unexpected_tables=extra, review_ok=review_ok, **evidence
    )


def verify_swap_excel_for_statistics(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"enrollments"})
    expected = {
        _course_id(initial, "XLS-110"): ("active", "dropped"),
        _course_id(initial, "STA-150"): ("", "active"),
    }
    changes = _enrollment_changes(diff)
    return _result(
        not extra and changes == expected,
        unexpected_tables=extra,
        enrollment_changes=changes,
    )


def verify_refuse_closed_spanish(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    deadline = initial.execute(
        "SELECT enroll_deadline FROM courses WHERE code = 'ESP-101'"
    ).fetchone()[0]
    answer = _norm(final_answer)
    why = any(w in answer for w in ("deadline", "closed", "passed", deadline)) or (
        "september 5" in answer or "5 september" in answer
    )
    return _result(
        not diff and deadline < "2025-09-15" and _refuses(final_answer) and why,
        changed_tables=sorted(diff),
        deadline=deadline,
        answer_refuses=_refuses(final_answer),
        answer_explains=why,
    )
