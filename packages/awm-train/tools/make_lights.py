"""Write the ``lights`` training environment's tasks.json and verifiers.py.

The tasks are a grid (switch each room on or off, dim each room, two switches at
once), so they are generated rather than written by hand; run this after
changing the grid: ``python packages/awm-train/tools/make_lights.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

BUNDLE = Path(__file__).resolve().parents[1] / "src" / "awm_train" / "envs" / "lights"
ROOMS = {  # room: (is_on, brightness) in seed.sql
    "kitchen": (0, 80),
    "bedroom": (1, 40),
    "bathroom": (0, 100),
    "living room": (1, 60),
    "hall": (1, 30),
    "office": (0, 90),
    "garage": (0, 100),
    "porch": (1, 50),
}
LEVELS = (20, 70)


def _slug(room: str) -> str:
    return room.replace(" ", "_")


def _switch(room: str, on: bool) -> dict:
    return {"tool": "switch_light", "arguments": {"room": room, "on": on}}


def _dim(room: str, level: int) -> dict:
    return {"tool": "set_brightness", "arguments": {"room": room, "brightness": level}}


def _other(room: str) -> str:
    names = list(ROOMS)
    return names[(names.index(room) + 1) % len(names)]


def tasks() -> list[tuple[dict, dict]]:
    """``(task, expected changes {room: {column: value}})`` for every task."""
    out: list[tuple[dict, dict]] = []
    for room, (is_on, _) in ROOMS.items():
        on = not is_on
        verb = "on" if on else "off"
        for i, text in enumerate(
            (f"Turn {verb} the light in the {room}.", f"Please switch the {room} light {verb}.")
        ):
            out.append(
                (
                    {
                        "id": f"switch_{_slug(room)}_{verb}_{i}",
                        "instruction": text,
                        "complexity": "easy",
                        "reference_solution": [_switch(room, on)],
                        "negative_examples": [
                            {
                                "description": "switches the wrong room",
                                "solution": [_switch(_other(room), not ROOMS[_other(room)][0])],
                                "final_answer": f"The {room} light is {verb}.",
                            }
                        ],
                        "tags": ["switch"],
                    },
                    {room: {"is_on": int(on)}},
                )
            )
    for room in ROOMS:
        for level in LEVELS:
            out.append(
                (
                    {
                        "id": f"dim_{_slug(room)}_{level}",
                        "instruction": f"Set the brightness of the {room} light to {level}.",
                        "complexity": "easy",
                        "reference_solution": [_dim(room, level)],
                        "negative_examples": [
                            {
                                "description": "sets another level",
                                "solution": [_dim(room, 100 - level)],
                                "final_answer": f"The {room} light is at {level}.",
                            }
                        ],
                        "tags": ["brightness"],
                    },
                    {room: {"brightness": level}},
                )
            )
    names = list(ROOMS)
    for i, first in enumerate(names):
        second = names[(i + 3) % len(names)]
        a, b = not ROOMS[first][0], not ROOMS[second][0]
        va, vb = ("on" if a else "off"), ("on" if b else "off")
        out.append(
            (
                {
                    "id": f"two_{_slug(first)}_{_slug(second)}",
                    "instruction": f"Turn {va} the {first} light and turn {vb} the {second} light.",
                    "complexity": "easy",
                    "reference_solution": [_switch(first, a), _switch(second, b)],
                    "negative_examples": [
                        {
                            "description": "does only the first half",
                            "solution": [_switch(first, a)],
                            "final_answer": "Both lights are switched.",
                        }
                    ],
                    "tags": ["switch", "two_calls"],
                },
                {first: {"is_on": int(a)}, second: {"is_on": int(b)}},
            )
        )
    return out


HEADER = '''"""Verifiers for the lights environment (awm native signature); written by
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
    wrong = sorted(room for room in expected.keys() | after.keys() if expected.get(room) != after.get(room))
    return {"complete": not wrong, "evidence": {"wrong_rooms": wrong, "expected": want}}
'''


def main() -> None:
    pairs = tasks()
    task_list = []
    lines = [HEADER]
    for task, want in pairs:
        name = f"verify_{task['id']}"
        task_list.append(
            {
                **task,
                "reference_answer": "Done.",
                "verifier": name,
                "success_criteria": [
                    f"The lights table changes exactly as asked: {json.dumps(want)}."
                ],
                "failure_criteria": ["Any other light changes, or the asked change is missing."],
            }
        )
        lines.append(
            f"\n\ndef {name}(\n    initial: sqlite3.Connection, final: sqlite3.Connection, "
            f"final_answer: str | None\n) -> dict[str, Any]:\n    return _expect(initial, final, {want!r})\n"
        )
    (BUNDLE / "tasks.json").write_text(json.dumps(task_list, indent=1) + "\n", encoding="utf-8")
    (BUNDLE / "verifiers.py").write_text("".join(lines), encoding="utf-8")
    print(f"{len(task_list)} tasks -> {BUNDLE}")


if __name__ == "__main__":
    main()
