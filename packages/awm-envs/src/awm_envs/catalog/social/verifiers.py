"""Verifiers for the social environment's tasks (awm native signature).

Each verifier compares the initial and final databases: the intended change
must be there and nothing else may differ. Answer-judged tasks compare the
final answer with facts read from the database.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

ME = 1
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


def _uid(conn: sqlite3.Connection, handle: str) -> int:
    return conn.execute("SELECT user_id FROM users WHERE handle = ?", (handle,)).fetchone()[0]


def _added(diff: dict[str, Any], table: str, *cols: str) -> list[tuple[Any, ...]] | None:
    """The added rows of a table as sorted tuples of `cols`; None if rows changed or vanished."""
    part = _part(diff, table)
    if part["changed"] or part["removed"]:
        return None
    return sorted(tuple(r[c] for c in cols) for r in part["added"])


def _removed(diff: dict[str, Any], table: str, *cols: str) -> list[tuple[Any, ...]] | None:
    part = _part(diff, table)
    if part["changed"] or part["added"]:
        return None
    return sorted(tuple(r[c] for c in cols) for r in part["removed"])


# --------------------------------------------------------------------------- tasks


def verify_latest_post_likes(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    likes = initial.execute(
        "SELECT COUNT(l.like_id) FROM posts p LEFT JOIN likes l ON l.post_id = p.post_id "
        "WHERE p.post_id = (SELECT post_id FROM posts WHERE author_id = ? "
        "ORDER BY created_at DESC LIMIT 1)",
        (ME,),
    ).fetchone()[0]
    ok = _mentions_int(final_answer, likes) and "like" in _norm(final_answer)
    return _result(not diff and ok, changed_tables=sorted(diff), likes=likes, answer_ok=ok)


def verify_approve_marta(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"follows"})
    marta = _uid(initial, "marta.l")
    part = _part(diff, "follows")
    ok = (
        not part["added"]
        and not part["removed"]
        and [(a["follower_id"], a["followee_id"], b["status"]) for a, b in part["changed"]]
        == [(marta, ME, "active")]
    )
    return _result(not extra and ok, unexpected_tables=extra, approved=ok)


def verify_refuse_leo_comment(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    leo = initial.execute("SELECT is_private FROM users WHERE handle = 'leo.park'").fetchone()[0]
    follows = initial.execute(
        "SELECT COUNT(*) FROM follows WHERE follower_id = ? AND followee_id = ? AND status = 'active'",
        (ME, _uid(initial, "leo.park")),
    ).fetchone()[0]
    answer = _norm(final_answer)
    why = "private" in answer and "follow" in answer
    return _result(
        not diff and leo == 1 and follows == 0 and _refuses(final_answer) and why,
        changed_tables=sorted(diff),
        answer_refuses=_refuses(final_answer),
        answer_explains=why,
    )


def verify_switch_groups_and_post(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"group_members", "posts"})
    film = initial.execute(
        "SELECT group_id FROM groups WHERE name = 'Film Photography Club'"
    ).fetchone()[0]
    sourdough = initial.execute(
        "SELECT group_id FROM groups WHERE name = 'Sourdough Bakers'"
    ).fetchone()[0]
    members = _part(diff, "group_members")
    members_ok = (
        not members["changed"]
        and [(r["group_id"], r["user_id"]) for r in members["removed"]] == [(film, ME)]
        and [(r["group_id"], r["user_id"], r["role"]) for r in members["added"]]
        == [(sourdough, ME, "member")]
    )
    posts = _added(diff, "posts", "author_id", "group_id")
    body_ok = [_norm(p["body"]) for p in _part(diff, "posts")["added"]] == [
        "first loaf with the new starter"
    ]
    return _result(
        not extra and members_ok and posts == [(ME, sourdough)] and body_ok,
        unexpected_tables=extra,
        members_ok=members_ok,
        posts=posts,
        body_ok=body_ok,
    )


def verify_clean_spam(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"comments", "blocks", "follows"})
    spam = _uid(initial, "spam.bot.99")
    spam_comments = sorted(
        (r[0],)
        for r in initial.execute(
            "SELECT c.comment_id FROM comments c JOIN posts p ON p.post_id = c.post_id "
            "WHERE p.author_id = ? AND c.author_id = ?",
            (ME, spam),
        )
    )
    comments_ok = _removed(diff, "comments", "comment_id") == spam_comments and bool(spam_comments)
    blocks_ok = _added(diff, "blocks", "blocker_id", "blocked_id") == [(ME, spam)]
    # the spam account's pending request is gone, whether rejected first or removed by the block
    follows_ok = _removed(diff, "follows", "follower_id", "followee_id") == [(spam, ME)]
    return _result(
        not extra and comments_ok and blocks_ok and follows_ok,
        unexpected_tables=extra,
        expected_comments=[c[0] for c in spam_comments],
        comments_ok=comments_ok,
        blocked=blocks_ok,
        request_removed=follows_ok,
    )


def verify_like_hana_week(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"likes"})
    hana = _uid(initial, "hana.s")
    todo = sorted(
        (r[0], ME)
        for r in initial.execute(
            "SELECT post_id FROM posts WHERE author_id = ? AND created_at >= '2025-05-05' "
            "AND post_id NOT IN (SELECT post_id FROM likes WHERE user_id = ?)",
            (hana, ME),
        )
    )
    added = _added(diff, "likes", "post_id", "user_id")
    return _result(not extra and added == todo, unexpected_tables=extra, expected=todo, liked=added)


def verify_tidy_graph(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"follows", "messages"})
    following = {
        r[0]
        for r in initial.execute("SELECT followee_id FROM follows WHERE follower_id = ?", (ME,))
    }
    quiet = sorted(
        (ME, u)
        for u in following
        if not initial.execute(
            "SELECT 1 FROM posts WHERE author_id = ? AND created_at >= '2025-01-01'", (u,)
        ).fetchone()
    )
    back = sorted(
        u
        for (u,) in initial.execute(
            "SELECT follower_id FROM follows WHERE followee_id = ? AND status = 'active'", (ME,)
        )
        if u not in following
    )
    part = _part(diff, "follows")
    removed_ok = (
        not part["changed"]
        and sorted((r["follower_id"], r["followee_id"]) for r in part["removed"]) == quiet
    )
    private = {r[0] for r in initial.execute("SELECT user_id FROM users WHERE is_private = 1")}
    added = sorted((r["follower_id"], r["followee_id"], r["status"]) for r in part["added"])
    added_ok = added == [(ME, u, "pending" if u in private else "active") for u in back]
    messages = _added(diff, "messages", "sender_id", "recipient_id")
    bodies_ok = all(
        _norm(m["body"]) == "thanks for the follow" for m in _part(diff, "messages")["added"]
    )
    messages_ok = messages == [(ME, u) for u in back] and bodies_ok
    return _result(
        not extra and removed_ok and added_ok and messages_ok and bool(quiet) and bool(back),
        unexpected_tables=extra,
        expected_unfollows=[u for _, u in quiet],
        expected_follow_backs=back,
        unfollows_ok=removed_ok,
        follows_ok=added_ok,
        messages_ok=messages_ok,
    )


def verify_follow_designer_alex(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"follows", "likes", "comments"})
    alex = _uid(initial, "alex.kim.design")
    recent = [
        r[0]
        for r in initial.execute(
            "SELECT post_id FROM posts WHERE author_id = ? ORDER BY created_at DESC LIMIT 3",
            (alex,),
        )
    ]
    already = {r[0] for r in initial.execute("SELECT post_id FROM likes WHERE user_id = ?", (ME,))}
    follows_ok = _added(diff, "follows", "follower_id", "followee_id", "status") == [
        (ME, alex, "active")
    ]
    likes_ok = _added(diff, "likes", "post_id", "user_id") == sorted(
        (p, ME) for p in recent if p not in already
    )
    comments = _part(diff, "comments")
    comment_ok = (
        not comments["changed"]
        and not comments["removed"]
        and [(c["post_id"], c["author_id"], _norm(c["body"])) for c in comments["added"]]
        == [(recent[0], ME, "love this palette")]
    )
    return _result(
        not extra and follows_ok and likes_ok and comment_ok,
        unexpected_tables=extra,
        recent_posts=recent,
        follows_ok=follows_ok,
        likes_ok=likes_ok,
        comment_ok=comment_ok,
    )


def verify_update_bio(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"users"})
    part = _part(diff, "users")
    ok = (
        not part["added"]
        and not part["removed"]
        and len(part["changed"]) == 1
        and part["changed"][0][0]["user_id"] == ME
        and _changed_cols(*part["changed"][0]) == {"bio"}
        and _norm(part["changed"][0][1]["bio"]) == "runner, baker, film nerd"
    )
    return _result(not extra and ok, unexpected_tables=extra, bio_ok=ok)


def verify_runners_post_and_comment(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"posts", "comments"})
    runners = initial.execute(
        "SELECT group_id FROM groups WHERE name = 'Portland Runners'"
    ).fetchone()[0]
    sam_latest = initial.execute(
        "SELECT post_id FROM posts WHERE group_id = ? AND author_id = ? ORDER BY created_at DESC LIMIT 1",
        (runners, _uid(initial, "sam.okafor")),
    ).fetchone()[0]
    posts = _part(diff, "posts")
    post_ok = (
        not posts["changed"]
        and not posts["removed"]
        and [(p["author_id"], p["group_id"], _norm(p["body"])) for p in posts["added"]]
        == [(ME, runners, "track workout tonight at 6, who's in?")]
    )
    comments = _part(diff, "comments")
    comment_ok = (
        not comments["changed"]
        and not comments["removed"]
        and [(c["post_id"], c["author_id"], _norm(c["body"])) for c in comments["added"]]
        == [(sam_latest, ME, "count me in for sunday")]
    )
    return _result(
        not extra and post_ok and comment_ok,
        unexpected_tables=extra,
        sam_post=sam_latest,
        post_ok=post_ok,
        comment_ok=comment_ok,
    )
