"""Verifiers for the lights environment (awm native signature); written by
packages/awm-train/tools/make_lights.py, do not edit by hand.

Every task is a state change: the named rooms' columns must hold the expected
values and nothing else in the database may differ.
"""

from __future__ import annotations

import sqlite3
from typing import Any


def _lights(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    return {r[0]: (r[1], r[2]) for r in conn.execute("SELECT room, is_on, brightness FROM lights")}


def _expect(
    initial: sqlite3.Connection, final: sqlite3.Connection, want: dict[str, dict[str, int]]
) -> dict[str, Any]:
    before, after = _lights(initial), _lights(final)
    expected = dict(before)
    for room, cols in want.items():
        on, level = expected[room]
        expected[room] = (cols.get("is_on", on), cols.get("brightness", level))
    wrong = sorted(
        room for room in expected.keys() | after.keys() if expected.get(room) != after.get(room)
    )
    return {"complete": not wrong, "evidence": {"wrong_rooms": wrong, "expected": want}}


def verify_switch_kitchen_on_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"kitchen": {"is_on": 1}})


def verify_switch_kitchen_on_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"kitchen": {"is_on": 1}})


def verify_switch_bedroom_off_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bedroom": {"is_on": 0}})


def verify_switch_bedroom_off_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bedroom": {"is_on": 0}})


def verify_switch_bathroom_on_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bathroom": {"is_on": 1}})


def verify_switch_bathroom_on_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bathroom": {"is_on": 1}})


def verify_switch_living_room_off_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"living room": {"is_on": 0}})


def verify_switch_living_room_off_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"living room": {"is_on": 0}})


def verify_switch_hall_off_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"hall": {"is_on": 0}})


def verify_switch_hall_off_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"hall": {"is_on": 0}})


def verify_switch_office_on_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"office": {"is_on": 1}})


def verify_switch_office_on_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"office": {"is_on": 1}})


def verify_switch_garage_on_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"garage": {"is_on": 1}})


def verify_switch_garage_on_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"garage": {"is_on": 1}})


def verify_switch_porch_off_0(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"porch": {"is_on": 0}})


def verify_switch_porch_off_1(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"porch": {"is_on": 0}})


def verify_dim_kitchen_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"kitchen": {"brightness": 20}})


def verify_dim_kitchen_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"kitchen": {"brightness": 70}})


def verify_dim_bedroom_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bedroom": {"brightness": 20}})


def verify_dim_bedroom_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bedroom": {"brightness": 70}})


def verify_dim_bathroom_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bathroom": {"brightness": 20}})


def verify_dim_bathroom_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bathroom": {"brightness": 70}})


def verify_dim_living_room_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"living room": {"brightness": 20}})


def verify_dim_living_room_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"living room": {"brightness": 70}})


def verify_dim_hall_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"hall": {"brightness": 20}})


def verify_dim_hall_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"hall": {"brightness": 70}})


def verify_dim_office_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"office": {"brightness": 20}})


def verify_dim_office_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"office": {"brightness": 70}})


def verify_dim_garage_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"garage": {"brightness": 20}})


def verify_dim_garage_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"garage": {"brightness": 70}})


def verify_dim_porch_20(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"porch": {"brightness": 20}})


def verify_dim_porch_70(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"porch": {"brightness": 70}})


def verify_two_kitchen_living_room(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"kitchen": {"is_on": 1}, "living room": {"is_on": 0}})


def verify_two_bedroom_hall(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bedroom": {"is_on": 0}, "hall": {"is_on": 0}})


def verify_two_bathroom_office(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"bathroom": {"is_on": 1}, "office": {"is_on": 1}})


def verify_two_living_room_garage(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"living room": {"is_on": 0}, "garage": {"is_on": 1}})


def verify_two_hall_porch(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"hall": {"is_on": 0}, "porch": {"is_on": 0}})


def verify_two_office_kitchen(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"office": {"is_on": 1}, "kitchen": {"is_on": 1}})


def verify_two_garage_bedroom(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"garage": {"is_on": 1}, "bedroom": {"is_on": 0}})


def verify_two_porch_bathroom(
    initial: sqlite3.Connection, final: sqlite3.Connection, final_answer: str | None
) -> dict[str, Any]:
    return _expect(initial, final, {"porch": {"is_on": 0}, "bathroom": {"is_on": 1}})
