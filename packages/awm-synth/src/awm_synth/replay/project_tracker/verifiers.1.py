"""Verifiers of the project tracker's tasks: check the change and that nothing else moved."""

import sqlite3

SOLUTIONS = {
    "close_login_timeout": {
        "verifier": "verify_close_login_timeout",
        "reference_solution": [{"tool": "update_issue_status", "arguments": {"issue_id": 4, "status": "done"}}],
        "reference_answer": None,
        "wrong_solution": {"description": "closes the docs issue", "solution": [{"tool": "update_issue_status", "arguments": {"issue_id": 3, "status": "done"}}]},
    },
    "file_csv_bug": {
        "verifier": "verify_file_csv_bug",
        "reference_solution": [
            {"tool": "list_projects", "arguments": {}},
            {"tool": "list_project_members", "arguments": {"project_id": 1}},
            {"tool": "create_issue", "arguments": {"project_id": 1, "title": "Export fails for CSV", "priority": "high", "assignee_id": 3}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "default priority", "solution": [{"tool": "create_issue", "arguments": {"project_id": 1, "title": "Export fails for CSV", "assignee_id": 3}}]},
    },
    "comment_payment_api": {
        "verifier": "verify_comment_payment_api",
        "reference_solution": [
            {"tool": "search_issues", "arguments": {"project_id": 1, "q": "payment"}},
            {"tool": "add_comment", "arguments": {"issue_id": 2, "body": "Blocked on API keys"}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "comments on the wrong issue", "solution": [{"tool": "add_comment", "arguments": {"issue_id": 12, "body": "Blocked on API keys"}}]},
    },
    "reassign_borealis": {
        "verifier": "verify_reassign_borealis",
        "reference_solution": [
            {"tool": "search_issues", "arguments": {"project_id": 2, "assignee_id": 1, "status": "open"}},
            {"tool": "list_project_members", "arguments": {"project_id": 2}},
            {"tool": "assign_issue", "arguments": {"issue_id": 5, "assignee_id": 2}},
            {"tool": "assign_issue", "arguments": {"issue_id": 6, "assignee_id": 2}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "moves only one issue", "solution": [{"tool": "assign_issue", "arguments": {"issue_id": 5, "assignee_id": 2}}]},
    },
    "refuse_zephyr_close": {
        "verifier": "verify_refuse_zephyr_close",
        "reference_solution": [{"tool": "list_projects", "arguments": {}}],
        "reference_answer": "I can't close issue 9: it belongs to project Zephyr, and you are not a member of Zephyr.",
        "wrong_solution": {"description": "claims success", "solution": [], "final_answer": "Issue 9 is now closed."},
    },
}

TABLES = ("users", "projects", "project_members", "issues", "comments")


def _all(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def _changed(initial, final, tables=TABLES) -> list[str]:
    return [t for t in tables if _all(initial, t) != _all(final, t)]


def _issues(conn) -> dict[int, tuple]:
    return {r[0]: r for r in conn.execute("SELECT issue_id, project_id, title, status, priority, assignee_id FROM issues")}


def _changed_issues(initial, final) -> set[int]:
    a, b = _issues(initial), _issues(final)
    return {i for i in set(a) | set(b) if a.get(i) != b.get(i)}


def verify_close_login_timeout(initial, final, final_answer=None) -> dict:
    status = final.execute("SELECT status FROM issues WHERE issue_id = 4").fetchone()[0]
    changed = _changed_issues(initial, final)
    ok = status == "done" and changed == {4} and not _changed(initial, final, ("comments", "project_members"))
    return {"complete": ok, "evidence": {"status": status, "changed_issues": sorted(changed)}}


def verify_file_csv_bug(initial, final, final_answer=None) -> dict:
    before = _issues(initial)
    new = [r for i, r in _issues(final).items() if i not in before]
    ok = (
        len(new) == 1
        and new[0][1] == 1
        and " ".join(new[0][2].lower().split()) == "export fails for csv"
        and new[0][3:6] == ("open", "high", 3)
        and _changed_issues(initial, final) == {new[0][0]}
    )
    return {"complete": ok, "evidence": {"new_issues": new}}


def verify_comment_payment_api(initial, final, final_answer=None) -> dict:
    rows = final.execute("SELECT comment_id FROM comments WHERE issue_id = 2 AND user_id = 1").fetchall()
    return {"complete": len(rows) >= 1, "evidence": {"my_comments_on_issue_2": len(rows)}}


def verify_reassign_borealis(initial, final, final_answer=None) -> dict:
    after = _issues(final)
    ok = after[5][5] == 2 and after[6][5] == 2 and after[7][5] == 1 and _changed_issues(initial, final) == {5, 6}
    return {"complete": ok, "evidence": {"assignees": {i: after[i][5] for i in (5, 6, 7)}}}


def verify_refuse_zephyr_close(initial, final, final_answer=None) -> dict:
    changed = _changed(initial, final)
    answer = (final_answer or "").lower()
    explains = "not a member" in answer or "no access" in answer or "not allowed" in answer
    return {"complete": not changed and explains, "evidence": {"changed_tables": changed, "explains": explains}}
