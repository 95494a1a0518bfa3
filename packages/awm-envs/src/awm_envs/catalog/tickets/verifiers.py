"""Verifiers for the tickets environment's tasks (awm native signature).

Each verifier compares the initial and final databases: the intended change
must be there and nothing else may differ. Answer-judged tasks compare the
final answer with facts read from the database.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

CUSTOMER = 1
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


def _mentions_amount(text: str | None, cents: int) -> bool:
    """True if the text states the amount as dollars (45.00) or as cents (4500)."""
    return any(abs(n - cents / 100) < 0.005 or n == cents for n in _numbers(text))


def _event_id(conn: sqlite3.Connection, name: str, city: str | None = None, day: str = "") -> int:
    sql = (
        "SELECT e.event_id FROM events e JOIN venues v ON v.venue_id = e.venue_id "
        "WHERE e.name = ? AND e.starts_at LIKE ?"
    )
    params: tuple[Any, ...] = (name, f"{day}%")
    if city:
        sql += " AND v.city = ?"
        params += (city,)
    return conn.execute(sql, params).fetchone()[0]


def _tier_id(conn: sqlite3.Connection, event_id: int, section_code: str) -> int:
    return conn.execute(
        "SELECT t.tier_id FROM ticket_tiers t JOIN sections s ON s.section_id = t.section_id "
        "WHERE t.event_id = ? AND s.code = ?",
        (event_id, section_code),
    ).fetchone()[0]


def _held(conn: sqlite3.Connection, where: str, params: tuple[Any, ...] = ()) -> dict[int, int]:
    """ticket_id -> price paid for the customer's valid tickets matching `where` (on e, t, tk)."""
    return {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT tk.ticket_id, tk.price_paid_cents FROM tickets tk "
            "JOIN ticket_tiers t ON t.tier_id = tk.tier_id JOIN events e ON e.event_id = t.event_id "
            f"WHERE tk.holder_customer_id = ? AND tk.status = 'valid' AND {where}",
            (CUSTOMER, *params),
        )
    }


def _new_orders(diff: dict[str, Any]) -> list[dict[str, Any]] | None:
    part = _part(diff, "orders")
    if part["removed"]:
        return None
    return part["added"]


def _status_changes(diff: dict[str, Any], table: str, key: str) -> dict[int, str] | None:
    """key -> new status for changed rows whose only changes are status-like columns."""
    part = _part(diff, table)
    if part["removed"]:
        return None
    out = {}
    for a, b in part["changed"]:
        out[a[key]] = b["status"]
    return out


def _bought(diff: dict[str, Any], orders: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """order_id -> the new tickets of each new order."""
    ids = {o["order_id"] for o in orders}
    out: dict[int, list[dict[str, Any]]] = {o["order_id"]: [] for o in orders}
    for t in _part(diff, "tickets")["added"]:
        if t["order_id"] in ids:
            out[t["order_id"]].append(t)
    return out


def _purchase_ok(
    diff: dict[str, Any], expected: list[tuple[int, int, int, int | None, int]]
) -> tuple[bool, list[Any]]:
    """New orders are exactly `expected` (event, tier, quantity, promo_id, total_cents), paid by
    the customer, each with its valid tickets held by the customer."""
    orders = _new_orders(diff)
    if orders is None:
        return False, []
    tickets = _bought(diff, orders)
    made = sorted(
        (
            o["event_id"],
            tickets[o["order_id"]][0]["tier_id"] if tickets[o["order_id"]] else 0,
            len(tickets[o["order_id"]]),
            o["promo_id"],
            o["total_cents"],
        )
        for o in orders
        if o["customer_id"] == CUSTOMER and o["status"] == "paid"
    )
    uniform = all(
        len({t["tier_id"] for t in ts}) == 1
        and all(t["holder_customer_id"] == CUSTOMER for t in ts)
        for ts in tickets.values()
    )
    key = sorted(expected, key=lambda x: (x[0], x[1], x[2], x[3] or 0, x[4]))
    made_key = sorted(made, key=lambda x: (x[0], x[1], x[2], x[3] or 0, x[4]))
    return len(made) == len(orders) and uniform and made_key == key, made


# --------------------------------------------------------------------------- tasks


def verify_nova_seats(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    event = _event_id(initial, "Nova Lights - Aurora Tour", "Seattle")
    seats = [
        r[0]
        for r in initial.execute(
            "SELECT tk.seat_label FROM tickets tk JOIN ticket_tiers t ON t.tier_id = tk.tier_id "
            "WHERE t.event_id = ? AND tk.holder_customer_id = ? AND tk.status = 'valid'",
            (event, CUSTOMER),
        )
    ]
    answer = _norm(final_answer)
    rows = {re.search(r"row (\w+)", s.lower()).group(1) for s in seats}
    nums = {int(re.search(r"seat (\d+)", s.lower()).group(1)) for s in seats}
    ok = (
        bool(seats)
        and all(f"row {r}" in answer for r in rows)
        and all(_mentions_int(final_answer, n) for n in nums)
        and ("lower bowl" in answer or "100" in answer)
    )
    return _result(not diff and ok, changed_tables=sorted(diff), seats=seats, answer_ok=ok)


def verify_accept_riley_ticket(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"transfers", "tickets"})
    transfer, ticket = initial.execute(
        "SELECT tr.transfer_id, tr.ticket_id FROM transfers tr JOIN customers c "
        "ON c.customer_id = tr.from_customer_id WHERE c.name = 'Riley Chen' AND tr.status = 'pending' "
        "AND tr.to_customer_id = ?",
        (CUSTOMER,),
    ).fetchone()
    transfers = _part(diff, "transfers")
    tickets = _part(diff, "tickets")
    ok = (
        not transfers["added"]
        and not transfers["removed"]
        and [(a["transfer_id"], b["status"]) for a, b in transfers["changed"]]
        == [(transfer, "accepted")]
        and not tickets["added"]
        and not tickets["removed"]
        and [(a["ticket_id"], b["holder_customer_id"], b["status"]) for a, b in tickets["changed"]]
        == [(ticket, CUSTOMER, "valid")]
    )
    return _result(not extra and ok, unexpected_tables=extra, transfer=transfer, ticket=ticket)


def verify_refuse_clockmaker_refund(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    starts = initial.execute(
        "SELECT starts_at FROM events WHERE name = 'The Clockmaker''s Daughter'"
    ).fetchone()[0]
    answer = _norm(final_answer)
    why = any(
        w in answer
        for w in (
            "7 days",
            "seven days",
            "deadline",
            "cut-off",
            "cutoff",
            "closed",
            "november 1",
            "2025-11-01",
        )
    )
    return _result(
        not diff and starts < "2025-11-10" and _refuses(final_answer) and why,
        changed_tables=sorted(diff),
        event_starts=starts,
        answer_refuses=_refuses(final_answer),
        answer_explains=why,
    )


def verify_laugh_riot_refund_and_improv(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "refunds", "orders"})
    laugh = _event_id(initial, "Laugh Riot with Dee Moreno")
    improv = _event_id(initial, "Improv Jam")
    held = _held(initial, "e.event_id = ?", (laugh,))
    refunds = _part(diff, "refunds")
    refunds_ok = (
        not refunds["removed"]
        and not refunds["changed"]
        and sorted((r["ticket_id"], r["amount_cents"]) for r in refunds["added"])
        == sorted(held.items())
    )
    tickets_ok = _status_changes(diff, "tickets", "ticket_id") == dict.fromkeys(held, "refunded")
    laugh_order = initial.execute(
        "SELECT order_id FROM orders WHERE customer_id = ? AND event_id = ?", (CUSTOMER, laugh)
    ).fetchone()[0]
    orders_ok = _status_changes(diff, "orders", "order_id") == {laugh_order: "refunded"}
    tier = _tier_id(initial, improv, "BCK")
    price = initial.execute(
        "SELECT price_cents FROM ticket_tiers WHERE tier_id = ?", (tier,)
    ).fetchone()[0]
    bought_ok, made = _purchase_ok(diff, [(improv, tier, 2, None, 2 * price)])
    return _result(
        not extra and refunds_ok and tickets_ok and orders_ok and bought_ok,
        unexpected_tables=extra,
        refunds_ok=refunds_ok,
        tickets_ok=tickets_ok,
        orders_ok=orders_ok,
        purchases=made,
    )


def verify_gala_best_promo(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "orders", "promo_codes"})
    gala = _event_id(initial, "Winter Symphony Gala")
    tier = _tier_id(initial, gala, "STL")
    price = initial.execute(
        "SELECT price_cents FROM ticket_tiers WHERE tier_id = ?", (tier,)
    ).fetchone()[0]
    promo = initial.execute("SELECT promo_id FROM promo_codes WHERE code = 'GALA20'").fetchone()[0]
    subtotal = 2 * price
    bought_ok, made = _purchase_ok(diff, [(gala, tier, 2, promo, subtotal - subtotal * 20 // 100)])
    promos = _part(diff, "promo_codes")
    promo_ok = (
        not promos["added"]
        and not promos["removed"]
        and [(a["code"], b["used_count"] - a["used_count"]) for a, b in promos["changed"]]
        == [("GALA20", 1)]
    )
    existing_ok = not _part(diff, "tickets")["changed"] and not _part(diff, "orders")["changed"]
    return _result(
        not extra and bought_ok and promo_ok and existing_ok,
        unexpected_tables=extra,
        purchases=made,
        promo_ok=promo_ok,
    )


def verify_nova_extra_for_casey(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "orders", "transfers"})
    nova = _event_id(initial, "Nova Lights - Aurora Tour", "Seattle")
    tier = initial.execute(
        "SELECT DISTINCT tk.tier_id FROM tickets tk JOIN ticket_tiers t ON t.tier_id = tk.tier_id "
        "WHERE t.event_id = ? AND tk.holder_customer_id = ?",
        (nova, CUSTOMER),
    ).fetchone()[0]
    price = initial.execute(
        "SELECT price_cents FROM ticket_tiers WHERE tier_id = ?", (tier,)
    ).fetchone()[0]
    bought_ok, made = _purchase_ok(diff, [(nova, tier, 2, None, 2 * price)])
    new_tickets = sorted(t["ticket_id"] for t in _part(diff, "tickets")["added"])
    casey = initial.execute(
        "SELECT customer_id FROM customers WHERE email = 'casey.morgan@mail.example'"
    ).fetchone()[0]
    transfers = _part(diff, "transfers")
    transfers_ok = (
        not transfers["changed"]
        and not transfers["removed"]
        and sorted(
            (t["ticket_id"], t["to_customer_id"], t["status"], t["from_customer_id"])
            for t in transfers["added"]
        )
        == [(t, casey, "pending", CUSTOMER) for t in new_tickets]
    )
    # the new tickets are pending transfer; nothing else about any ticket changed
    final_status = {
        r[0]: r[1]
        for r in final.execute(
            f"SELECT ticket_id, status FROM tickets WHERE ticket_id IN ({','.join('?' * len(new_tickets))})",
            new_tickets,
        )
    }
    pending_ok = not _part(diff, "tickets")["changed"] and all(
        s == "transfer_pending" for s in final_status.values()
    )
    return _result(
        not extra and bought_ok and transfers_ok and pending_ok and len(new_tickets) == 2,
        unexpected_tables=extra,
        purchases=made,
        transfers_ok=transfers_ok,
        pending_ok=pending_ok,
    )


def verify_reclaim_gala_ticket(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"transfers", "tickets"})
    transfer, ticket = initial.execute(
        "SELECT transfer_id, ticket_id FROM transfers WHERE from_customer_id = ? "
        "AND to_email = 'sam.ortiz@mail.example' AND status = 'pending'",
        (CUSTOMER,),
    ).fetchone()
    transfers = _part(diff, "transfers")
    tickets = _part(diff, "tickets")
    transfer_ok = (
        not transfers["added"]
        and not transfers["removed"]
        and [(a["transfer_id"], b["status"]) for a, b in transfers["changed"]]
        == [(transfer, "cancelled")]
    )
    ticket_ok = (
        not tickets["added"]
        and not tickets["removed"]
        and len(tickets["changed"]) == 1
        and tickets["changed"][0][0]["ticket_id"] == ticket
        and _changed_cols(*tickets["changed"][0]) == {"status", "attendee_name"}
        and tickets["changed"][0][1]["status"] == "valid"
        and _norm(tickets["changed"][0][1]["attendee_name"]) == "morgan blake"
    )
    return _result(
        not extra and transfer_ok and ticket_ok,
        unexpected_tables=extra,
        transfer_ok=transfer_ok,
        ticket_ok=ticket_ok,
    )


def verify_clear_november(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "refunds", "orders", "transfers"})
    held = _held(
        initial,
        "e.starts_at > '2025-11-03T15:00:00Z' AND e.starts_at < '2025-12-01' "
        "AND e.name <> 'Nova Lights - Aurora Tour'",
    )
    refundable = {
        tid
        for tid in held
        if initial.execute(
            "SELECT e.status <> 'scheduled' OR (t.refundable = 1 AND "
            "datetime(e.starts_at, '-7 days') >= datetime('2025-11-03T15:00:00')) "
            "FROM tickets tk JOIN ticket_tiers t ON t.tier_id = tk.tier_id "
            "JOIN events e ON e.event_id = t.event_id JOIN orders o ON o.order_id = tk.order_id "
            "WHERE tk.ticket_id = ? AND o.customer_id = ?",
            (tid, CUSTOMER),
        ).fetchone()[0]
    }
    to_send = set(held) - refundable
    refunds = _part(diff, "refunds")
    refunds_ok = (
        not refunds["removed"]
        and not refunds["changed"]
        and sorted((r["ticket_id"], r["amount_cents"]) for r in refunds["added"])
        == sorted((t, held[t]) for t in refundable)
    )
    transfers = _part(diff, "transfers")
    transfers_ok = (
        not transfers["removed"]
        and not transfers["changed"]
        and sorted((t["ticket_id"], _norm(t["to_email"]), t["status"]) for t in transfers["added"])
        == sorted((t, "alex.blake@mail.example", "pending") for t in to_send)
    )
    expected_tickets = {t: "refunded" for t in refundable} | {
        t: "transfer_pending" for t in to_send
    }
    tickets_ok = (
        _status_changes(diff, "tickets", "ticket_id") == expected_tickets
        and not _part(diff, "tickets")["added"]
        and all(_changed_cols(a, b) == {"status"} for a, b in _part(diff, "tickets")["changed"])
    )
    orders = _part(diff, "orders")
    orders_ok = (
        not orders["added"]
        and not orders["removed"]
        and all(
            _changed_cols(a, b) == {"status"} and b["customer_id"] == CUSTOMER
            for a, b in orders["changed"]
        )
    )
    return _result(
        not extra and refunds_ok and transfers_ok and tickets_ok and orders_ok,
        unexpected_tables=extra,
        refund_expected=sorted(refundable),
        transfer_expected=sorted(to_send),
        refunds_ok=refunds_ok,
        transfers_ok=transfers_ok,
        tickets_ok=tickets_ok,
        orders_ok=orders_ok,
    )


def verify_jazz_cheapest_dec6(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    event = _event_id(initial, "Jazz at the Lyric: Marcus Hale Quartet", day="2025-12-06")
    name, price = initial.execute(
        "SELECT t.name, t.price_cents FROM ticket_tiers t WHERE t.event_id = ? AND t.quantity > "
        "(SELECT COUNT(*) FROM tickets tk WHERE tk.tier_id = t.tier_id AND tk.status <> 'refunded') "
        "ORDER BY t.price_cents LIMIT 1",
        (event,),
    ).fetchone()
    ok = name.lower() in _norm(final_answer) and _mentions_amount(final_answer, price)
    return _result(
        not diff and ok, changed_tables=sorted(diff), cheapest=name, price_cents=price, answer_ok=ok
    )


def verify_jazz_both_nights(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "orders"})
    name = "Jazz at the Lyric: Marcus Hale Quartet"
    nights = [_event_id(initial, name, day=d) for d in ("2025-12-05", "2025-12-06")]
    expected = []
    for e in nights:
        tier = _tier_id(initial, e, "ORC")
        price = initial.execute(
            "SELECT price_cents FROM ticket_tiers WHERE tier_id = ?", (tier,)
        ).fetchone()[0]
        expected.append((e, tier, 2, None, 2 * price))
    bought_ok, made = _purchase_ok(diff, expected)
    orders = {o["order_id"]: o["event_id"] for o in _part(diff, "orders")["added"]}
    names: dict[int, list[str]] = {}
    for (ticket_id,) in [(t["ticket_id"],) for t in _part(diff, "tickets")["added"]]:
        order_id, attendee = final.execute(
            "SELECT order_id, attendee_name FROM tickets WHERE ticket_id = ?", (ticket_id,)
        ).fetchone()
        names.setdefault(orders.get(order_id, 0), []).append(_norm(attendee))
    names_ok = (
        all(sorted(names.get(e, [])) == ["dana blake", "jordan blake"] for e in nights)
        and not _part(diff, "tickets")["changed"]
    )
    return _result(
        not extra and bought_ok and names_ok and not _part(diff, "orders")["changed"],
        unexpected_tables=extra,
        purchases=made,
        attendee_names={str(k): v for k, v in names.items()},
    )
