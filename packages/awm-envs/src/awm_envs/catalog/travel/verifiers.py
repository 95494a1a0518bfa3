"""Verifiers for the travel environment's tasks (awm native signature).

Each verifier compares the initial and final databases: the intended change
must be there and nothing else may differ. Answer-judged tasks compare the
final answer with facts read from the database.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

CUSTOMER = 1
NOW = "2025-07-01T12:00:00Z"


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


def _passenger(conn: sqlite3.Connection, name: str) -> int:
    return conn.execute(
        "SELECT passenger_id FROM passengers WHERE customer_id = ? AND full_name = ?",
        (CUSTOMER, name),
    ).fetchone()[0]


def _booking_for(conn: sqlite3.Connection, destination: str) -> int:
    return conn.execute(
        "SELECT DISTINCT b.booking_id FROM bookings b JOIN tickets t USING (booking_id) "
        "JOIN flights f USING (flight_id) WHERE b.customer_id = ? AND b.status = 'confirmed' "
        "AND f.destination_code = ?",
        (CUSTOMER, destination),
    ).fetchone()[0]


def _cheapest_flex(conn: sqlite3.Connection, origin: str, dest: str, day: str, seats: int) -> tuple:
    return conn.execute(
        "SELECT flight_id, fare_flex_cents FROM flights WHERE origin_code = ? AND destination_code = ? "
        "AND departs_at LIKE ? AND status = 'scheduled' AND seats_available >= ? "
        "ORDER BY fare_flex_cents, departs_at LIMIT 1",
        (origin, dest, day + "%", seats),
    ).fetchone()


def _seat_changes(diff: dict[str, Any]) -> dict[int, int] | None:
    changes = _changes(diff, "flights", "flight_id")
    if changes is None or any(set(c) != {"seats_available"} for c in changes.values()):
        return None
    return {k: c["seats_available"][1] - c["seats_available"][0] for k, c in changes.items()}


def _night_changes(diff: dict[str, Any]) -> dict[tuple, int] | None:
    part = _part(diff, "room_nights")
    if part["added"] or part["removed"]:
        return None
    out = {}
    for before, after in part["changed"]:
        if _changed_cols(before, after) != {"rooms_left"}:
            return None
        out[(before["room_type_id"], before["night"])] = after["rooms_left"] - before["rooms_left"]
    return out


def _nights(room_type: int, check_in: str, check_out: str, delta: int) -> dict[tuple, int]:
    start, end = int(check_in[-2:]), int(check_out[-2:])
    return {(room_type, f"{check_in[:8]}{d:02d}"): delta for d in range(start, end)}


def _payments_added(diff: dict[str, Any]) -> list[tuple] | None:
    part = _part(diff, "payments")
    if part["removed"] or part["changed"]:
        return None
    return sorted(
        (p["booking_id"], p["amount_cents"], p["method"], p["kind"]) for p in part["added"]
    )


def _new_tickets(diff: dict[str, Any]) -> list[tuple] | None:
    part = _part(diff, "tickets")
    if part["removed"]:
        return None
    return sorted(
        (
            t["booking_id"],
            t["flight_id"],
            t["passenger_id"],
            t["fare_type"],
            t["price_cents"],
            t["paid_with"],
            t["status"],
        )
        for t in part["added"]
    )


# --------------------------------------------------------------------------- tasks


def verify_lisbon_reference(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    booking = _booking_for(initial, "LIS")
    reference, departs = initial.execute(
        "SELECT b.reference, MIN(f.departs_at) FROM bookings b JOIN tickets t USING (booking_id) "
        "JOIN flights f USING (flight_id) WHERE b.booking_id = ?",
        (booking,),
    ).fetchone()
    answer = _norm(final_answer)
    hour = int(departs[11:13])
    times = {
        departs[11:16],
        f"{hour % 12 or 12} pm",
        f"{hour % 12 or 12}pm",
        f"{hour % 12 or 12}:00 pm",
        f"{hour % 12 or 12}:00pm",
    }
    has_ref = reference.lower() in answer
    has_time = any(t in answer for t in times)
    return _result(
        not diff and has_ref and has_time,
        changed_tables=sorted(diff),
        reference=reference,
        departs_at=departs,
        answer_has_reference=has_ref,
        answer_has_time=has_time,
    )


def verify_leo_passport(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"passengers"})
    leo = _passenger(initial, "Leo Petrov")
    changes = _changes(diff, "passengers", "passenger_id")
    ok = (
        changes is not None
        and set(changes) == {leo}
        and set(changes[leo]) == {"passport_number", "passport_expires"}
        and changes[leo]["passport_number"][1] == "P7745120"
        and changes[leo]["passport_expires"][1] == "2035-06-30"
    )
    return _result(not extra and ok, unexpected_tables=extra, passport_updated=ok)


def verify_refuse_lisbon_refund(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    fares = {
        r[0]
        for r in initial.execute(
            "SELECT fare_type FROM tickets WHERE booking_id = ?", (_booking_for(initial, "LIS"),)
        )
    }
    answer = _norm(final_answer)
    explains = any(
        w in answer for w in ("non-refundable", "nonrefundable", "not refundable", "basic")
    )
    return _result(
        not diff and fares == {"basic"} and explains and _refuses(final_answer),
        changed_tables=sorted(diff),
        fare_types=sorted(fares),
        answer_explains=explains,
    )


def verify_refuse_sold_out(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    seats = initial.execute(
        "SELECT seats_available FROM flights WHERE origin_code = 'BOS' AND destination_code = 'ORD' "
        "AND departs_at = '2025-07-18T08:00:00Z'"
    ).fetchone()[0]
    answer = _norm(final_answer)
    explains = any(
        w in answer
        for w in (
            "sold out",
            "sold-out",
            "no seats",
            "0 seats",
            "zero seats",
            "fully booked",
            "is full",
        )
    )
    return _result(
        not diff and seats == 0 and explains,
        changed_tables=sorted(diff),
        seats=seats,
        answer_explains=explains,
    )


def verify_book_bos_ord(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"bookings", "tickets", "flights", "payments"})
    flight, fare = _cheapest_flex(initial, "BOS", "ORD", "2025-07-18", 1)
    bookings = _part(diff, "bookings")
    new = bookings["added"][0] if len(bookings["added"]) == 1 else None
    booking_ok = (
        new is not None
        and not bookings["changed"]
        and not bookings["removed"]
        and new["customer_id"] == CUSTOMER
        and new["status"] == "confirmed"
    )
    bid = new["booking_id"] if new else -1
    nina = _passenger(initial, "Nina Petrova")
    tickets_ok = _new_tickets(diff) == [(bid, flight, nina, "flex", fare, "card", "issued")]
    tickets_ok = tickets_ok and not _part(diff, "tickets")["changed"]
    seats_ok = _seat_changes(diff) == {flight: -1}
    pay_ok = _payments_added(diff) == [(bid, fare, "card", "charge")]
    return _result(
        not extra and booking_ok and tickets_ok and seats_ok and pay_ok,
        unexpected_tables=extra,
        expected_flight=flight,
        booking_ok=booking_ok,
        tickets_ok=tickets_ok,
        seats_ok=seats_ok,
        payment_ok=pay_ok,
    )


def verify_change_boston_flight(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"tickets", "flights", "payments"})
    ticket, booking, old_flight, old_price = initial.execute(
        "SELECT t.ticket_id, t.booking_id, t.flight_id, t.price_cents FROM tickets t "
        "JOIN bookings b USING (booking_id) JOIN flights f USING (flight_id) "
        "WHERE b.customer_id = ? AND t.status = 'issued' AND f.destination_code = 'BOS'",
        (CUSTOMER,),
    ).fetchone()
    new_flight, new_fare = initial.execute(
        "SELECT flight_id, fare_flex_cents FROM flights WHERE origin_code = 'JFK' AND destination_code = 'BOS' "
        "AND departs_at >= '2025-07-03T17:00:00Z' AND departs_at < '2025-07-04' AND status = 'scheduled' "
        "AND seats_available > 0 ORDER BY departs_at LIMIT 1"
    ).fetchone()
    changes = _changes(diff, "tickets", "ticket_id")
    ticket_ok = changes == {
        ticket: {
            "flight_id": (old_flight, new_flight),
            "price_cents": (old_price, max(old_price, new_fare)),
        }
    }
    seats_ok = _seat_changes(diff) == {old_flight: 1, new_flight: -1}
    expected_pay = (
        [(booking, new_fare - old_price, "card", "charge")] if new_fare > old_price else []
    )
    pay_ok = _payments_added(diff) == expected_pay
    return _result(
        not extra and ticket_ok and seats_ok and pay_ok,
        unexpected_tables=extra,
        expected_flight=new_flight,
        ticket_ok=ticket_ok,
        seats_ok=seats_ok,
        payment_ok=pay_ok,
    )


def verify_add_mila_lisbon(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"passengers", "tickets", "flights", "payments"})
    booking = _booking_for(initial, "LIS")
    flight, fare = initial.execute(
        "SELECT f.flight_id, f.fare_basic_cents FROM tickets t JOIN flights f USING (flight_id) "
        "WHERE t.booking_id = ? AND f.destination_code = 'LIS'",
        (booking,),
    ).fetchone()
    mila = _passenger(initial, "Mila Petrova")
    pax = _changes(diff, "passengers", "passenger_id")
    pax_ok = pax == {
        mila: {"passport_number": (None, "P5521907"), "passport_expires": (None, "2030-03-01")}
    }
    tickets_ok = _new_tickets(diff) == [(booking, flight, mila, "basic", fare, "card", "issued")]
    tickets_ok = tickets_ok and not _part(diff, "tickets")["changed"]
    seats_ok = _seat_changes(diff) == {flight: -1}
    pay_ok = _payments_added(diff) == [(booking, fare, "card", "charge")]
    return _result(
        not extra and pax_ok and tickets_ok and seats_ok and pay_ok,
        unexpected_tables=extra,
        passport_ok=pax_ok,
        tickets_ok=tickets_ok,
        seats_ok=seats_ok,
        payment_ok=pay_ok,
    )


def verify_swap_lisbon_hotel(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(diff, {"hotel_stays", "room_nights", "payments"})
    booking = _booking_for(initial, "LIS")
    old_stay, old_rt, check_in, check_out, old_price = initial.execute(
        "SELECT stay_id, room_type_id, check_in, check_out, price_cents FROM hotel_stays "
        "WHERE booking_id = ? AND status = 'confirmed'",
        (booking,),
    ).fetchone()
    n = int(check_out[-2:]) - int(check_in[-2:])
    best = None
    for rt, rate in initial.execute(
        "SELECT r.room_type_id, r.nightly_rate_cents FROM room_types r JOIN hotels h USING (hotel_id) "
        "WHERE h.city = 'Lisbon' AND h.stars >= 4 ORDER BY r.nightly_rate_cents, r.room_type_id"
    ):
        left = initial.execute(
            "SELECT MIN(rooms_left), COUNT(*) FROM room_nights WHERE room_type_id = ? AND night >= ? AND night < ?",
            (rt, check_in, check_out),
        ).fetchone()
        if left[1] == n and left[0] >= 1:
            best = (rt, rate)
            break
    stays = _part(diff, "hotel_stays")
    cancel_ok = (
        not stays["removed"]
        and len(stays["changed"]) == 1
        and stays["changed"][0][0]["stay_id"] == old_stay
        and _changed_cols(*stays["changed"][0]) == {"status"}
        and stays["changed"][0][1]["status"] == "cancelled"
    )
    new = [
        (
            s["booking_id"],
            s["room_type_id"],
            s["check_in"],
            s["check_out"],
            s["rooms"],
            s["price_cents"],
            s["paid_with"],
            s["status"],
        )
        for s in stays["added"]
    ]
    book_ok = best is not None and new == [
        (booking, best[0], check_in, check_out, 1, best[1] * n, "card", "confirmed")
    ]
    nights_ok = best is not None and _night_changes(diff) == {
        **_nights(old_rt, check_in, check_out, 1),
        **_nights(best[0], check_in, check_out, -1),
    }
    pay_ok = best is not None and _payments_added(diff) == sorted(
        [(booking, -old_price, "card", "refund"), (booking, best[1] * n, "card", "charge")]
    )
    return _result(
        not extra and cancel_ok and book_ok and nights_ok and pay_ok,
        unexpected_tables=extra,
        expected_room_type=best,
        cancelled=cancel_ok,
        booked=book_ok,
        nights_ok=nights_ok,
        payments_ok=pay_ok,
    )


def verify_lisbon_return(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(
        diff, {"passengers", "tickets", "flights", "payments", "loyalty_ledger", "customers"}
    )
    booking = _booking_for(initial, "LIS")
    nina, leo = _passenger(initial, "Nina Petrova"), _passenger(initial, "Leo Petrov")
    flight, fare = _cheapest_flex(initial, "LIS", "JFK", "2025-07-16", 2)
    pax_ok = _changes(diff, "passengers", "passenger_id") == {
        leo: {
            "passport_number": (
                initial.execute(
                    "SELECT passport_number FROM passengers WHERE passenger_id = ?", (leo,)
                ).fetchone()[0],
                "P7745120",
            ),
            "passport_expires": ("2025-08-15", "2035-06-30"),
        }
    }
    tickets_ok = _new_tickets(diff) == sorted(
        (booking, flight, p, "flex", fare, "points", "issued") for p in (nina, leo)
    )
    tickets_ok = tickets_ok and not _part(diff, "tickets")["changed"]
    seats_ok = _seat_changes(diff) == {flight: -2}
    pay_ok = _payments_added(diff) == [(booking, 2 * fare, "points", "charge")]
    balance = initial.execute(
        "SELECT points_balance FROM customers WHERE customer_id = ?", (CUSTOMER,)
    ).fetchone()[0]
    points_ok = _changes(diff, "customers", "customer_id") == {
        CUSTOMER: {"points_balance": (balance, balance - 2 * fare)}
    }
    ledger = _part(diff, "loyalty_ledger")
    ledger_ok = (
        not ledger["changed"]
        and not ledger["removed"]
        and [(e["customer_id"], e["booking_id"], e["points"]) for e in ledger["added"]]
        == [(CUSTOMER, booking, -2 * fare)]
    )
    return _result(
        not extra and pax_ok and tickets_ok and seats_ok and pay_ok and points_ok and ledger_ok,
        unexpected_tables=extra,
        expected_flight=flight,
        passport_ok=pax_ok,
        tickets_ok=tickets_ok,
        seats_ok=seats_ok,
        payment_ok=pay_ok,
        points_ok=points_ok and ledger_ok,
    )


def verify_toronto_weekend(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict:
    diff = _diff(initial, final)
    extra = _unexpected(
        diff,
        {"passengers", "bookings", "tickets", "flights", "hotel_stays", "room_nights", "payments"},
    )
    family = [_passenger(initial, n) for n in ("Nina Petrova", "Leo Petrov", "Mila Petrova")]
    out_flight, out_fare = _cheapest_flex(initial, "JFK", "YYZ", "2025-07-25", 3)
    back_flight, back_fare = _cheapest_flex(initial, "YYZ", "JFK", "2025-07-27", 3)
    room = None
    for rt, rate in initial.execute(
        "SELECT r.room_type_id, r.nightly_rate_cents FROM room_types r JOIN hotels h USING (hotel_id) "
        "WHERE h.city = 'Toronto' ORDER BY r.nightly_rate_cents, r.room_type_id"
    ):
        left = initial.execute(
            "SELECT MIN(rooms_left), COUNT(*) FROM room_nights WHERE room_type_id = ? "
            "AND night IN ('2025-07-25', '2025-07-26')",
            (rt,),
        ).fetchone()
        if left[1] == 2 and left[0] >= 2:
            room = (rt, rate)
            break
    boston = _booking_for(initial, "BOS")
    b_ticket, b_flight, b_price = initial.execute(
        "SELECT ticket_id, flight_id, price_cents FROM tickets WHERE booking_id = ? AND status = 'issued'",
        (boston,),
    ).fetchone()
    b_stay, b_rt, b_in, b_out, b_stay_price = initial.execute(
        "SELECT stay_id, room_type_id, check_in, check_out, price_cents FROM hotel_stays "
        "WHERE booking_id = ? AND status = 'confirmed'",
        (boston,),
    ).fetchone()

    pax = _changes(diff, "passengers", "passenger_id") or {}
    pax_ok = (
        set(pax) == set(family[1:])
        and pax[family[1]].get("passport_number", (None, None))[1] == "P7745120"
        and pax[family[1]].get("passport_expires", (None, None))[1] == "2035-06-30"
        and pax[family[2]].get("passport_number", (None, None))[1] == "P5521907"
        and pax[family[2]].get("passport_expires", (None, None))[1] == "2030-03-01"
    )
    bookings = _part(diff, "bookings")
    new = bookings["added"][0] if len(bookings["added"]) == 1 else None
    bid = new["booking_id"] if new else -1
    bookings_ok = (
        new is not None
        and new["customer_id"] == CUSTOMER
        and new["status"] == "confirmed"
        and not bookings["removed"]
        and [(b["booking_id"], _changed_cols(b, a), a["status"]) for b, a in bookings["changed"]]
        == [(boston, {"status"}, "cancelled")]
    )
    tickets = _part(diff, "tickets")
    tickets_ok = _new_tickets(diff) == sorted(
        [(bid, out_flight, p, "flex", out_fare, "card", "issued") for p in family]
        + [(bid, back_flight, p, "flex", back_fare, "card", "issued") for p in family]
    ) and [(b["ticket_id"], _changed_cols(b, a), a["status"]) for b, a in tickets["changed"]] == [
        (b_ticket, {"status"}, "cancelled")
    ]
    seats_ok = _seat_changes(diff) == {out_flight: -3, back_flight: -3, b_flight: 1}
    stays = _part(diff, "hotel_stays")
    stays_ok = (
        room is not None
        and [
            (
                s["booking_id"],
                s["room_type_id"],
                s["check_in"],
                s["check_out"],
                s["rooms"],
                s["price_cents"],
                s["status"],
            )
            for s in stays["added"]
        ]
        == [(bid, room[0], "2025-07-25", "2025-07-27", 2, room[1] * 4, "confirmed")]
        and [(b["stay_id"], _changed_cols(b, a), a["status"]) for b, a in stays["changed"]]
        == [(b_stay, {"status"}, "cancelled")]
    )
    nights_ok = room is not None and _night_changes(diff) == {
        **_nights(room[0], "2025-07-25", "2025-07-27", -2),
        **_nights(b_rt, b_in, b_out, 1),
    }
    pay_ok = room is not None and _payments_added(diff) == sorted(
        [
            (bid, 3 * out_fare, "card", "charge"),
            (bid, 3 * back_fare, "card", "charge"),
            (bid, room[1] * 4, "card", "charge"),
            (boston, -b_price, "card", "refund"),
            (boston, -b_stay_price, "card", "refund"),
        ]
    )
    return _result(
        not extra
        and pax_ok
        and bookings_ok
        and tickets_ok
        and seats_ok
        and stays_ok
        and nights_ok
        and pay_ok,
        unexpected_tables=extra,
        expected_flights=[out_flight, back_flight],
        expected_room=room,
        passports_ok=pax_ok,
        bookings_ok=bookings_ok,
        tickets_ok=tickets_ok,
        seats_ok=seats_ok,
        stays_ok=stays_ok,
        nights_ok=nights_ok,
        payments_ok=pay_ok,
    )
