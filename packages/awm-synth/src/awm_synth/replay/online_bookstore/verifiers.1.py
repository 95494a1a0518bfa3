"""Verifiers of the online bookstore's tasks: compare the database before and after."""

import sqlite3

SOLUTIONS = {
    "price_silent_orchard": {
        "verifier": "verify_price_silent_orchard",
        "reference_solution": [{"tool": "search_books", "arguments": {"q": "The Silent Orchard"}}],
        "reference_answer": "'The Silent Orchard' costs $18.50.",
        "wrong_solution": {"description": "answers the price of another book", "solution": [], "final_answer": "It costs $19.25."},
    },
    "buy_harbor_lights": {
        "verifier": "verify_buy_harbor_lights",
        "reference_solution": [
            {"tool": "search_books", "arguments": {"q": "Harbor Lights"}},
            {"tool": "create_order", "arguments": {"book_id": 2, "quantity": 2}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "orders one copy only", "solution": [{"tool": "create_order", "arguments": {"book_id": 2, "quantity": 1}}]},
    },
    "cancel_pending_order": {
        "verifier": "verify_cancel_pending_order",
        "reference_solution": [{"tool": "cancel_order", "arguments": {"order_id": 3}}],
        "reference_answer": None,
        "wrong_solution": {"description": "tries to cancel someone else's order", "solution": [{"tool": "cancel_order", "arguments": {"order_id": 4}}]},
    },
    "review_harbor_lights": {
        "verifier": "verify_review_harbor_lights",
        "reference_solution": [
            {"tool": "search_books", "arguments": {"q": "Harbor Lights"}},
            {"tool": "add_review", "arguments": {"book_id": 2, "rating": 4, "body": "Lovely pacing and a great ending."}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "gives five stars", "solution": [{"tool": "add_review", "arguments": {"book_id": 2, "rating": 5, "body": "Lovely pacing and a great ending."}}]},
    },
    "refuse_cancel_shipped": {
        "verifier": "verify_refuse_cancel_shipped",
        "reference_solution": [{"tool": "get_order", "arguments": {"order_id": 2}}],
        "reference_answer": "Order 2 has already shipped, so it can no longer be cancelled.",
        "wrong_solution": {"description": "claims success", "solution": [{"tool": "cancel_order", "arguments": {"order_id": 2}}], "final_answer": "Done, order 2 is cancelled."},
    },
}

TABLES = ("users", "books", "orders", "order_items", "reviews")


def _rows(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


def _unchanged(initial: sqlite3.Connection, final: sqlite3.Connection, tables=TABLES) -> list[str]:
    return [t for t in tables if _rows(initial, t) != _rows(final, t)]


def _stock(conn: sqlite3.Connection) -> dict[int, int]:
    return dict(conn.execute("SELECT book_id, stock FROM books").fetchall())


def verify_price_silent_orchard(initial, final, final_answer=None) -> dict:
    changed = _unchanged(initial, final)
    answer = (final_answer or "").replace(",", "")
    mentions = "18.50" in answer or "18.5 " in answer + " "
    return {"complete": not changed and mentions, "evidence": {"changed_tables": changed, "price_in_answer": mentions}}


def verify_buy_harbor_lights(initial, final, final_answer=None) -> dict:
    before = {r[0] for r in initial.execute("SELECT order_id FROM orders")}
    new = final.execute("SELECT order_id, user_id, status FROM orders ORDER BY order_id").fetchall()
    new = [r for r in new if r[0] not in before]
    items = []
    if len(new) == 1:
        items = final.execute("SELECT book_id, quantity FROM order_items WHERE order_id = ?", (new[0][0],)).fetchall()
    stock_before, stock_after = _stock(initial), _stock(final)
    others_same = all(stock_after[b] == s for b, s in stock_before.items() if b != 2)
    ok = (
        len(new) == 1
        and new[0][1] == 1
        and new[0][2] == "pending"
        and items == [(2, 2)]
        and stock_after[2] == stock_before[2] - 2
        and others_same
        and not _unchanged(initial, final, ("users", "reviews"))
    )
    return {"complete": ok, "evidence": {"new_orders": new, "items": items, "stock_book_2": stock_after.get(2)}}


def verify_cancel_pending_order(initial, final, final_answer=None) -> dict:
    status = final.execute("SELECT status FROM orders WHERE order_id = 3").fetchone()[0]
    others_before = initial.execute("SELECT * FROM orders WHERE order_id != 3 ORDER BY 1").fetchall()
    others_after = final.execute("SELECT * FROM orders WHERE order_id != 3 ORDER BY 1").fetchall()
    stock_before, stock_after = _stock(initial), _stock(final)
    ok = (
        status == "cancelled"
        and others_before == others_after
        and stock_after[4] == stock_before[4] + 2
        and all(stock_after[b] == s for b, s in stock_before.items() if b != 4)
    )
    return {"complete": ok, "evidence": {"status": status, "stock_book_4": stock_after[4]}}


def verify_review_harbor_lights(initial, final, final_answer=None) -> dict:
    before = {r[0] for r in initial.execute("SELECT review_id FROM reviews")}
    new = [r for r in final.execute("SELECT review_id, book_id, user_id, rating, body FROM reviews") if r[0] not in before]
    ok = (
        len(new) == 1
        and new[0][1:4] == (2, 1, 4)
        and "lovely pacing and a great ending" in " ".join(new[0][4].lower().split())
        and not _unchanged(initial, final, ("users", "books", "orders", "order_items"))
    )
    return {"complete": ok, "evidence": {"new_reviews": new}}


def verify_refuse_cancel_shipped(initial, final, final_answer=None) -> dict:
    changed = _unchanged(initial, final)
    answer = (final_answer or "").lower()
    explains = "shipped" in answer and "cancelled" not in answer.replace("be cancelled", "")
    return {"complete": not changed and explains, "evidence": {"changed_tables": changed, "explains_shipped": explains}}
