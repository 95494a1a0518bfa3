"""Verifiers of the clinic's tasks: the intended change happened and nothing else did."""

import sqlite3

SOLUTIONS = {
    "book_osei_earliest": {
        "verifier": "verify_book_osei_earliest",
        "reference_solution": [
            {"tool": "list_doctors", "arguments": {"q": "Osei"}},
            {"tool": "search_slots", "arguments": {"doctor_id": 2, "date": "2025-03-18"}},
            {"tool": "book_appointment", "arguments": {"slot_id": 3, "reason": "knee pain"}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "books the afternoon slot", "solution": [{"tool": "book_appointment", "arguments": {"slot_id": 4, "reason": "knee pain"}}]},
    },
    "cancel_lin_appointment": {
        "verifier": "verify_cancel_lin_appointment",
        "reference_solution": [
            {"tool": "list_my_appointments", "arguments": {"status": "booked"}},
            {"tool": "cancel_appointment", "arguments": {"appointment_id": 3}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "cancels the flu visit instead", "solution": [{"tool": "cancel_appointment", "arguments": {"appointment_id": 4}}]},
    },
    "reschedule_flu_visit": {
        "verifier": "verify_reschedule_flu_visit",
        "reference_solution": [
            {"tool": "list_my_appointments", "arguments": {"status": "booked"}},
            {"tool": "search_slots", "arguments": {"doctor_id": 1, "date": "2025-03-19"}},
            {"tool": "reschedule_appointment", "arguments": {"appointment_id": 4, "new_slot_id": 8}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "moves it to 10:00", "solution": [{"tool": "reschedule_appointment", "arguments": {"appointment_id": 4, "new_slot_id": 6}}]},
    },
    "pay_ankle_invoice": {
        "verifier": "verify_pay_ankle_invoice",
        "reference_solution": [
            {"tool": "list_my_invoices", "arguments": {"status": "unpaid"}},
            {"tool": "pay_invoice", "arguments": {"invoice_id": 2}},
        ],
        "reference_answer": None,
        "wrong_solution": {"description": "tries the paid invoice", "solution": [{"tool": "pay_invoice", "arguments": {"invoice_id": 1}}]},
    },
    "refuse_booked_slot": {
        "verifier": "verify_refuse_booked_slot",
        "reference_solution": [{"tool": "search_slots", "arguments": {"doctor_id": 3}}],
        "reference_answer": "Slot 7 is already taken by another patient, so I did not book it. Dr. Jonas Weber's next free slot is 2025-03-24 at 09:30.",
        "wrong_solution": {"description": "books another slot unasked", "solution": [{"tool": "book_appointment", "arguments": {"slot_id": 9, "reason": "skin check"}}], "final_answer": "Booked you for a skin check."},
    },
}

TABLES = ("users", "doctors", "slots", "appointments", "invoices")


def _rows(conn: sqlite3.Connection, sql: str, params=()) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


def _changed(initial, final, tables=TABLES) -> list[str]:
    return [t for t in tables if _rows(initial, f"SELECT * FROM {t} ORDER BY 1") != _rows(final, f"SELECT * FROM {t} ORDER BY 1")]


def _booked(conn) -> dict[int, int]:
    return dict(_rows(conn, "SELECT slot_id, is_booked FROM slots"))


def _slots_differ(initial, final) -> set[int]:
    a, b = _booked(initial), _booked(final)
    return {s for s in a if a[s] != b.get(s)}


def verify_book_osei_earliest(initial, final, final_answer=None) -> dict:
    before = {r[0] for r in _rows(initial, "SELECT appointment_id FROM appointments")}
    new = [r for r in _rows(final, "SELECT appointment_id, user_id, slot_id, status, reason FROM appointments") if r[0] not in before]
    ok = (
        len(new) == 1
        and new[0][1:4] == (1, 3, "booked")
        and "knee" in new[0][4].lower()
        and _slots_differ(initial, final) == {3}
        and not _changed(initial, final, ("users", "doctors", "invoices"))
    )
    return {"complete": ok, "evidence": {"new_appointments": new}}


def verify_cancel_lin_appointment(initial, final, final_answer=None) -> dict:
    status = _rows(final, "SELECT status FROM appointments WHERE appointment_id = 3")[0][0]
    others_same = _rows(initial, "SELECT * FROM appointments WHERE appointment_id != 3 ORDER BY 1") == _rows(
        final, "SELECT * FROM appointments WHERE appointment_id != 3 ORDER BY 1"
    )
    ok = status == "cancelled" and others_same and _slots_differ(initial, final) == {5} and _booked(final)[5] == 0
    return {"complete": ok, "evidence": {"status": status, "slot_5_booked": _booked(final)[5]}}


def verify_reschedule_flu_visit(initial, final, final_answer=None) -> dict:
    row = _rows(final, "SELECT slot_id, status FROM appointments WHERE appointment_id = 4")[0]
    count_same = len(_rows(initial, "SELECT 1 FROM appointments")) == len(_rows(final, "SELECT 1 FROM appointments"))
    booked = _booked(final)
    ok = row == (8, "booked") and count_same and booked[8] == 1 and booked[11] == 0 and _slots_differ(initial, final) == {8, 11}
    return {"complete": ok, "evidence": {"appointment_4": row}}


def verify_pay_ankle_invoice(initial, final, final_answer=None) -> dict:
    row = _rows(final, "SELECT status, paid_at, amount FROM invoices WHERE invoice_id = 2")[0]
    others_same = _rows(initial, "SELECT * FROM invoices WHERE invoice_id != 2 ORDER BY 1") == _rows(
        final, "SELECT * FROM invoices WHERE invoice_id != 2 ORDER BY 1"
    )
    ok = row[0] == "paid" and row[1] is not None and row[2] == 120.0 and others_same
    ok = ok and not _changed(initial, final, ("appointments", "slots"))
    return {"complete": ok, "evidence": {"invoice_2": row}}


def verify_refuse_booked_slot(initial, final, final_answer=None) -> dict:
    changed = _changed(initial, final)
    answer = (final_answer or "").lower()
    explains = any(w in answer for w in ("taken", "already booked", "not available", "unavailable"))
    return {"complete": not changed and explains, "evidence": {"changed_tables": changed, "explains": explains}}
