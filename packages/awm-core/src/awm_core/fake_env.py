"""A tiny in-memory notes app that implements :class:`EnvSession`, with tasks.

It lets ``awm run``, the episode-loop tests and the benchmarks work with only
awm-core installed. It is a real environment, just small: state in a dict,
arguments validated against the tools' JSON Schemas, errors typed the way a
real awm environment types them (``invalid_arguments``, ``not_found``), and an
optional injected ``environment_error`` to exercise that termination path.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from awm_core.argcheck import check_arguments
from awm_core.models import Complexity, Task, ToolCallStep, ToolResult, ToolSpec

ENV_ID = "fake_notes"

_INITIAL: dict[str, Any] = {
    "next_id": 4,
    "notes": {
        1: {"id": 1, "title": "Groceries", "body": "milk, eggs, bread", "tags": ["home"]},
        2: {"id": 2, "title": "Standup", "body": "demo the episode loop", "tags": ["work"]},
        3: {"id": 3, "title": "Books", "body": "Dune; Piranesi", "tags": ["home", "reading"]},
    },
}

_INT_ID = {"note_id": {"type": "integer", "minimum": 1, "description": "The note's id."}}

TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="list_notes",
        description="List all notes (id, title, tags), optionally only those with a tag.",
        input_schema={
            "type": "object",
            "properties": {"tag": {"type": "string", "description": "Only notes with this tag."}},
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="get_note",
        description="Read one note, body included.",
        input_schema={
            "type": "object",
            "properties": _INT_ID,
            "required": ["note_id"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="create_note",
        description="Create a note and return it with its new id.",
        input_schema={
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["title", "body"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="update_note",
        description="Change a note's title and/or body.",
        input_schema={
            "type": "object",
            "properties": {
                **_INT_ID,
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
            },
            "required": ["note_id"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="delete_note",
        description="Delete a note.",
        input_schema={
            "type": "object",
            "properties": _INT_ID,
            "required": ["note_id"],
            "additionalProperties": False,
        },
    ),
]

TASKS: list[Task] = [
    Task(
        id="read_groceries",
        instruction="What is on my Groceries note? Answer with the note's body.",
        complexity=Complexity.EASY,
        reference_solution=[
            ToolCallStep(tool="list_notes", arguments={}),
            ToolCallStep(tool="get_note", arguments={"note_id": 1}),
        ],
        reference_answer="milk, eggs, bread",
    ),
    Task(
        id="create_todo",
        instruction="Create a note titled 'Todo' with the body 'call the plumber'.",
        complexity=Complexity.EASY,
        reference_solution=[
            ToolCallStep(
                tool="create_note", arguments={"title": "Todo", "body": "call the plumber"}
            )
        ],
        reference_answer="Created the note 'Todo' (id 4).",
    ),
    Task(
        id="retag_reading",
        instruction="Delete every note tagged 'work' and rename the 'Books' note to 'Reading list'.",
        complexity=Complexity.MEDIUM,
        reference_solution=[
            ToolCallStep(tool="list_notes", arguments={"tag": "work"}),
            ToolCallStep(tool="delete_note", arguments={"note_id": 2}),
            ToolCallStep(tool="update_note", arguments={"note_id": 3, "title": "Reading list"}),
        ],
        reference_answer="Deleted 'Standup' and renamed 'Books' to 'Reading list'.",
    ),
]


class FakeNotesEnv:
    """One isolated notes-app instance. ``reset()`` restores the initial state.

    ``fail_tools`` names tools that answer ``environment_error`` (as a crashed
    backend service would), for testing how the loop separates environment
    faults from agent mistakes.
    """

    env_id = ENV_ID

    def __init__(self, *, fail_tools: frozenset[str] | set[str] = frozenset()) -> None:
        self.fail_tools = frozenset(fail_tools)
        self.state: dict[str, Any] = copy.deepcopy(_INITIAL)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._handlers: dict[str, Callable[[dict[str, Any]], ToolResult]] = {
            "list_notes": self._list_notes,
            "get_note": self._get_note,
            "create_note": self._create_note,
            "update_note": self._update_note,
            "delete_note": self._delete_note,
        }
        self._schemas = {t.name: t.input_schema for t in TOOLS}

    def reset(self) -> None:
        """Back to the initial notes."""
        self.state = copy.deepcopy(_INITIAL)
        self.calls.clear()

    @staticmethod
    def tasks() -> list[Task]:
        """The tasks shipped with this environment."""
        return [t.model_copy(deep=True) for t in TASKS]

    async def list_tools(self) -> list[ToolSpec]:
        """The five notes tools."""
        return [t.model_copy(deep=True) for t in TOOLS]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Validate, run, time; errors come back as results, never as exceptions."""
        started = time.perf_counter()
        self.calls.append((name, copy.deepcopy(arguments)))
        result = self._dispatch(name, arguments)
        return result.model_copy(update={"latency_s": time.perf_counter() - started})

    def _dispatch(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name not in self._handlers:
            return _error("unknown_tool", f"no tool named {name!r}; call list_tools to see them")
        if name in self.fail_tools:
            return _error("environment_error", f"the {name} service is unavailable")
        problem = check_arguments(name, self._schemas[name], arguments)
        if problem is not None:
            return _error("invalid_arguments", f"invalid arguments for {name}: {problem}")
        return self._handlers[name](arguments)

    def _note(self, note_id: int) -> dict[str, Any] | None:
        note: dict[str, Any] | None = self.state["notes"].get(note_id)
        return note

    def _list_notes(self, args: dict[str, Any]) -> ToolResult:
        tag = args.get("tag")
        notes = [
            {"id": n["id"], "title": n["title"], "tags": n["tags"]}
            for n in self.state["notes"].values()
            if tag is None or tag in n["tags"]
        ]
        return ToolResult(content={"notes": notes})

    def _get_note(self, args: dict[str, Any]) -> ToolResult:
        note = self._note(args["note_id"])
        if note is None:
            return _error("not_found", f"note {args['note_id']} does not exist")
        return ToolResult(content=copy.deepcopy(note))

    def _create_note(self, args: dict[str, Any]) -> ToolResult:
        note_id = self.state["next_id"]
        self.state["next_id"] += 1
        note = {"id": note_id, "title": args["title"], "body": args["body"]}
        note["tags"] = list(args.get("tags", []))
        self.state["notes"][note_id] = note
        return ToolResult(content=copy.deepcopy(note))

    def _update_note(self, args: dict[str, Any]) -> ToolResult:
        note = self._note(args["note_id"])
        if note is None:
            return _error("not_found", f"note {args['note_id']} does not exist")
        for key in ("title", "body"):
            if key in args:
                note[key] = args[key]
        return ToolResult(content=copy.deepcopy(note))

    def _delete_note(self, args: dict[str, Any]) -> ToolResult:
        if self.state["notes"].pop(args["note_id"], None) is None:
            return _error("not_found", f"note {args['note_id']} does not exist")
        return ToolResult(content={"deleted": args["note_id"]})


def _error(error_type: str, message: str) -> ToolResult:
    return ToolResult(content={"error": message}, is_error=True, error_type=error_type)
