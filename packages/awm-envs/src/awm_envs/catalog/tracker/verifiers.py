"""Verifiers for the tracker environment's tasks (awm native signature).

Each verifier compares the initial and final databases: the intended change
must be there and nothing else may differ. Answer-judged tasks compare the
final answer with facts read from the database.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

USER = 1
NOW = "2025-11-05T10:00:00Z"
TODAY = NOW[:10]
OPEN = ("todo", "in_progress", "in_review")


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


EMPTY: dict[str, list[Any]] = {"added": [], "removed": [], "changed": []}


def _diff(initial: sqlite3.Connection, final: sqlite3.Connection) -> dict[str, dict[str, list]]:
    """Per table: rows added, removed, and changed ((before, after) pairs), keyed by rowid."""
    out: dict[str, dict[str, list]] = {}
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


def _changes(diff: dict[str, Any], table: str, key: str) -> dict[Any, dict[str, tuple]] | None:
    """{row key: {column: (before, after)}} for a table with only in-place changes, else None."""
    part = _part(diff, table)
    if part["added"] or part["removed"]:
        return None
    return {b[key]: {c: (b[c], a[c]) for c in _changed_cols(b, a)} for b, a in part["changed"]}


def _norm(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower()).replace("\u2019", "'")


def _numbers(text: str | None) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", text or "")]


def _mentions_amount(text: str | None, cents: int) -> bool:
    """True if the text states the amount as dollars (84.50) or as cents (8450)."""
    return any(abs(n - cents / 100) < 0.005 or n == cents for n in _numbers(text))


def _mentions_int(text: str | None, value: int) -> bool:
    return any(n == value for n in _numbers(text))


def _result(ok: bool, **evidence: Any) -> dict[str, Any]:
    return {"complete": bool(ok), "evidence": evidence}


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


def _refuses(text: str | None) -> bool:
    answer = _norm(text)
    return any(w in answer for w in REFUSAL_WORDS)


def _issue_id(conn: sqlite3.Connection, key: str) -> int:
    project, number = key.split("-")
    return conn.execute(
        "SELECT i.issue_id FROM issues i JOIN projects p USING (project_id) "
        "WHERE p.key = ? AND i.number = ?",
        (project, int(number)),
    ).fetchone()[0]


def _label_id(conn: sqlite3.Connection, project: str, name: str) -> int | None:
    row = conn.execute(
        "SELECT l.label_id FROM labels l JOIN projects p USING (project_id) "
        "WHERE p.key = ? AND l.name = ?",
        (project, name),
    ).fetchone()
    return row[0] if row else None


def _issue_changes(diff: dict[str, Any]) -> dict[int, dict[str, tuple]] | None:
    """In-place issue changes, ignoring updated_at (every write touches it)."""
    changes = _changes(diff, "issues", "issue_id")
    if changes is None:
        return None
    out = {}
    for issue_id, cols in changes.items():
        cols = {k: v for k, v in cols.items() if k != "updated_at"}
        if cols:
            out[issue_id] = cols
    return out


def _labels_added_removed(diff: dict[str, Any]) -> tuple[set, set, bool]:
    part = _part(diff, "issue_labels")
    added = {(r["issue_id"], r["label_id"]) for r in part["added"]}
    removed = {(r["issue_id"], r["label_id"]) for r in part["removed"]}
    return added, removed, not part["changed"]


# --------------------------------------------------------------------------- tasks


def verify_hours_last_week(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    minutes = initial.execute(
        "SELECT COALESCE(SUM(minutes), 0) FROM time_logs WHERE user_id = ? "
        "AND logged_on BETWEEN '2025-10-27' AND '2025-11-02'",
        (USER,),
    ).fetchone()[0]
    hours = minutes / 60
    nums = _numbers(final_answer)
    ok_answer = (
        any(abs(n - hours) < 0.01 for n in nums)
        or _mentions_int(final_answer, minutes)
        or (
            _mentions_int(final_answer, minutes // 60) and _mentions_int(final_answer, minutes % 60)
        )
    )
    return _result(
        not diff and ok_answer,
        changed_tables=sorted(diff),
        expected_minutes=minutes,
        answer_ok=ok_answer,
    )


def verify_take_web42(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues"})
    target = _issue_id(initial, "WEB-42")
    changes = _issue_changes(diff)
    ok = changes == {
        target: {
            "assignee_id": (None, USER),
            "status": ("todo", "in_progress"),
        }
    }
    return _result(not extra and ok, unexpected_tables=extra, issue_changes=str(changes))


def _refused_without_change(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None, words: tuple
) -> dict:
    diff = _diff(initial, final)
    answer = _norm(final_answer)
    explains = _refuses(final_answer) and any(w in answer for w in words)
    return _result(not diff and explains, changed_tables=sorted(diff), answer_explains=explains)


def verify_refuse_close_fin7(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    role = initial.execute(
        "SELECT m.role FROM project_members m JOIN projects p USING (project_id) "
        "WHERE p.key = 'FIN' AND m.user_id = ?",
        (USER,),
    ).fetchone()[0]
    out = _refused_without_change(
        initial, final, final_answer, ("viewer", "permission", "read-only", "read only", "access")
    )
    out["evidence"]["role"] = role
    out["complete"] = out["complete"] and role == "viewer"
    return out


def verify_refuse_log_archived(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    archived = initial.execute("SELECT is_archived FROM projects WHERE key = 'OLD'").fetchone()[0]
    out = _refused_without_change(initial, final, final_answer, ("archived",))
    out["complete"] = out["complete"] and archived == 1
    return out


def verify_log_comment_review(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues", "time_logs", "comments"})
    target = _issue_id(initial, "WEB-57")
    logs = _part(diff, "time_logs")
    log_ok = (
        not logs["removed"]
        and not logs["changed"]
        and len(logs["added"]) == 1
        and logs["added"][0]["issue_id"] == target
        and logs["added"][0]["user_id"] == USER
        and logs["added"][0]["minutes"] == 90
        and logs["added"][0]["logged_on"] == TODAY
        and "pairing" in _norm(logs["added"][0]["note"])
    )
    comments = _part(diff, "comments")
    comment_ok = (
        not comments["removed"]
        and not comments["changed"]
        and len(comments["added"]) == 1
        and comments["added"][0]["issue_id"] == target
        and comments["added"][0]["author_id"] == USER
        and _norm(comments["added"][0]["body"]).rstrip(".") == "root cause found: stale cart cache"
    )
    status_ok = _issue_changes(diff) == {target: {"status": ("in_progress", "in_review")}}
    return _result(
        not extra and log_ok and comment_ok and status_ok,
        unexpected_tables=extra,
        time_logged=log_ok,
        commented=comment_ok,
        moved_to_review=status_ok,
    )


def verify_file_mobile_crash(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues", "issue_labels"})
    project_id, next_number = initial.execute(
        "SELECT p.project_id, MAX(i.number) + 1 FROM projects p JOIN issues i USING (project_id) "
        "WHERE p.key = 'MOB'"
    ).fetchone()
    android_dev = initial.execute(
        "SELECT user_id FROM users WHERE name = 'Chris Lee' AND title = 'Android Engineer'"
    ).fetchone()[0]
    sprint = initial.execute(
        "SELECT sprint_id FROM sprints WHERE project_id = ? AND status = 'active'", (project_id,)
    ).fetchone()[0]
    issues = _part(diff, "issues")
    new = issues["added"][0] if len(issues["added"]) == 1 else None
    issue_ok = (
        new is not None
        and not issues["changed"]
        and not issues["removed"]
        and new["project_id"] == project_id
        and new["number"] == next_number
        and _norm(new["title"]).rstrip(".") == "crash when rotating on payment screen"
        and new["type"] == "bug"
        and new["priority"] == "high"
        and new["assignee_id"] == android_dev
        and new["sprint_id"] == sprint
        and new["status"] == "todo"
        and new["reporter_id"] == USER
    )
    added, removed, unchanged = _labels_added_removed(diff)
    labels_ok = (
        new is not None
        and unchanged
        and not removed
        and added
        == {
            (new["issue_id"], _label_id(initial, "MOB", "crash")),
            (new["issue_id"], _label_id(initial, "MOB", "android")),
        }
    )
    return _result(
        not extra and issue_ok and labels_ok,
        unexpected_tables=extra,
        new_issue=new,
        issue_ok=issue_ok,
        labels_ok=labels_ok,
    )


def verify_open_points_sprint(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    points = initial.execute(
        "SELECT COALESCE(SUM(i.estimate_points), 0) FROM issues i JOIN sprints s USING (sprint_id) "
        "JOIN projects p ON p.project_id = s.project_id WHERE p.key = 'WEB' AND s.status = 'active' "
        "AND i.status IN ('todo', 'in_progress', 'in_review')"
    ).fetchone()[0]
    ok_answer = _mentions_int(final_answer, points)
    return _result(
        not diff and ok_answer,
        changed_tables=sorted(diff),
        expected_points=points,
        answer_ok=ok_answer,
    )


def verify_sprint_rollover(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues", "sprints"})
    current, upcoming = (
        initial.execute("SELECT sprint_id FROM sprints WHERE name = ?", (name,)).fetchone()[0]
        for name in ("WEB Sprint 22", "WEB Sprint 23")
    )
    tech_debt = _label_id(initial, "WEB", "tech-debt")
    expected: dict[int, dict[str, tuple]] = {}
    for issue_id, labelled in initial.execute(
        "SELECT i.issue_id, EXISTS (SELECT 1 FROM issue_labels l WHERE l.issue_id = i.issue_id "
        "AND l.label_id = ?) FROM issues i WHERE i.sprint_id = ? "
        "AND i.status IN ('todo', 'in_progress', 'in_review')",
        (tech_debt, current),
    ):
        expected[issue_id] = {"sprint_id": (current, None if labelled else upcoming)}
    issues_ok = _issue_changes(diff) == expected
    sprints_ok = _changes(diff, "sprints", "sprint_id") == {
        current: {"status": ("active", "closed")},
        upcoming: {"status": ("planned", "active")},
    }
    return _result(
        not extra and issues_ok and sprints_ok,
        unexpected_tables=extra,
        expected_moves={k: list(v["sprint_id"]) for k, v in expected.items()},
        issues_ok=issues_ok,
        sprints_ok=sprints_ok,
    )


def verify_unblock_release(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues", "issue_labels", "time_logs", "comments"})
    release = _issue_id(initial, "WEB-61")
    blockers = [
        r[0]
        for r in initial.execute(
            "SELECT blocker_issue_id FROM issue_links WHERE blocked_issue_id = ?", (release,)
        )
    ]
    blocker = blockers[0] if len(blockers) == 1 else -1
    changes = _issue_changes(diff) or {}
    status_ok = set(changes) == {release, blocker} and all(
        set(c) == {"status", "closed_at"} and c["status"][1] == "done" for c in changes.values()
    )
    logs = _part(diff, "time_logs")
    log_ok = (
        not logs["removed"]
        and not logs["changed"]
        and [(r["issue_id"], r["user_id"], r["minutes"], r["logged_on"]) for r in logs["added"]]
        == [(blocker, USER, 120, TODAY)]
        and "review" in _norm(logs["added"][0]["note"])
    )
    added, removed, unchanged = _labels_added_removed(diff)
    labels_ok = (
        unchanged and not added and removed == {(release, _label_id(initial, "WEB", "blocked"))}
    )
    comments = _part(diff, "comments")
    comment_ok = (
        not comments["removed"]
        and not comments["changed"]
        and [(r["issue_id"], r["author_id"]) for r in comments["added"]] == [(release, USER)]
        and _norm(comments["added"][0]["body"]).rstrip(".!") == "unblocked and shipped"
    )
    return _result(
        not extra and status_ok and log_ok and labels_ok and comment_ok,
        unexpected_tables=extra,
        blocker=blocker,
        statuses_ok=status_ok,
        time_logged=log_ok,
        label_removed=labels_ok,
        commented=comment_ok,
    )


def verify_triage_backlog(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"issues", "issue_labels", "labels"})
    project_id = initial.execute("SELECT project_id FROM projects WHERE key = 'WEB'").fetchone()[0]
    active = initial.execute(
        "SELECT sprint_id FROM sprints WHERE project_id = ? AND status = 'active'", (project_id,)
    ).fetchone()[0]
    targets = [
        r[0]
        for r in initial.execute(
            "SELECT issue_id FROM issues WHERE project_id = ? AND type = 'bug' "
            "AND priority IN ('high', 'urgent') AND assignee_id IS NULL AND sprint_id IS NULL "
            "AND status IN ('todo', 'in_progress', 'in_review')",
            (project_id,),
        )
    ]
    labels = _part(diff, "labels")
    new_label = labels["added"][0] if len(labels["added"]) == 1 else None
    label_ok = (
        new_label is not None
        and not labels["changed"]
        and not labels["removed"]
        and new_label["project_id"] == project_id
        and _norm(new_label["name"]) == "triaged"
    )
    issues_ok = _issue_changes(diff) == {
        t: {"assignee_id": (None, USER), "sprint_id": (None, active)} for t in targets
    }
    added, removed, unchanged = _labels_added_removed(diff)
    tagged_ok = (
        new_label is not None
        and unchanged
        and not removed
        and added == {(t, new_label["label_id"]) for t in targets}
    )
    return _result(
        not extra and label_ok and issues_ok and tagged_ok,
        unexpected_tables=extra,
        expected_issues=targets,
        label_created=label_ok,
        issues_ok=issues_ok,
        tagged_ok=tagged_ok,
    )
