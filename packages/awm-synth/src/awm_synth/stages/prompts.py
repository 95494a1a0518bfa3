"""Every prompt the pipeline sends, in one place, stating the rules of a good environment.

The rules come from the project's environment guidelines (tools that explain
their errors, a frozen reference time, concrete and checkable tasks, verifiers
that compare before and after). Prompts are plain functions of the artifacts
so far; the replay backend answers by request tag, not by prompt text, so
they can be edited freely.
"""

from __future__ import annotations

import json
from datetime import datetime

from awm_core.models import Message, Scenario
from awm_synth.store.artifacts import DatabaseSchema, SeedData, TaskDraft, ToolInterfaceSpec

_ENV_RULES = """\
Rules every environment follows:
- The agent is already logged in as user_id {user_id}; other users' data exists and must never leak or change.
- The environment's "now" is fixed at {now} (the reference time). Never read the wall clock:
  no datetime('now'), CURRENT_TIMESTAMP, datetime.now() or time.time(). Write literal ISO-8601 times.
- Ids are named <entity>_id; list results are wrapped as {{"items": [...], "total": N}}; times are ISO-8601.
- Every tool checks its inputs against the current state (exists? allowed now? unique?) and answers an
  error the agent can act on: what was wrong and the valid values or the tool to call first.
  Never a bare 500, never a stack trace."""


def _system(role: str, user_id: int, now: datetime) -> Message:
    text = f"{role}\n\n" + _ENV_RULES.format(user_id=user_id, now=now.isoformat())
    return Message(role="system", content=text)


def _scenario_block(scenario: Scenario) -> str:
    return f"Scenario `{scenario.name}` ({scenario.category or 'uncategorised'}):\n{scenario.description}"


# -- scenarios ---------------------------------------------------------------------------------------


def scenario_expansion(seeds: list[str], known: list[Scenario], batch: int) -> list[Message]:
    """Self-instruct: propose ``batch`` new application scenarios from seed domains and known ones."""
    examples = "\n".join(f"- {s.name}: {s.description}" for s in known[-20:]) or "(none yet)"
    return [
        Message(
            role="system",
            content=(
                "You design stateful software applications that an AI agent could operate through an "
                "HTTP API backed by a relational database. Each application has users, records that "
                "are created, read, updated and deleted, and rules about which changes are allowed."
            ),
        ),
        Message(
            role="user",
            content=(
                f"Seed domains: {', '.join(seeds)}\n\nScenarios we already have:\n{examples}\n\n"
                f"Propose {batch} NEW scenarios, each different in purpose from the ones above "
                "(not a rename). For each give a snake_case `name`, a 2-4 sentence `description` "
                "naming the main entities and the actions a logged-in user takes, a `category` and "
                'the `seed` domain it grew from. Answer JSON: {"scenarios": [{"name", "description", '
                '"category", "seed"}]}.'
            ),
        ),
    ]


def scenario_classification(scenarios: list[Scenario]) -> list[Message]:
    """Ask which scenarios fit a database-backed CRUD environment."""
    listing = "\n".join(f"- {s.name}: {s.description}" for s in scenarios)
    return [
        Message(
            role="system",
            content=(
                "You judge whether an application can become a training environment: a SQLite "
                "database plus API tools where an agent's actions change state that can be checked. "
                "Unsuitable: read-only information sites, apps whose core is real-world sensing, "
                "media playback, physical hardware, free-form chat, or live external data."
            ),
        ),
        Message(
            role="user",
            content=(
                f"Scenarios:\n{listing}\n\nFor every scenario answer whether it is suitable and why "
                '(one sentence). Answer JSON: {"verdicts": [{"name", "suitable", "reason"}]}.'
            ),
        ),
    ]


# -- tasks --------------------------------------------------------------------------------------------


def tasks_prompt(scenario: Scenario, count: int, user_id: int, now: datetime) -> list[Message]:
    return [
        _system(
            "You write tasks for an AI agent that operates an application through its API.",
            user_id,
            now,
        ),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nWrite {count} tasks the logged-in user would ask for.\n"
                "- Concrete and checkable: names, dates, amounts and quantities in the text; exactly one "
                "right end state.\n- Solvable through the API alone, after login (no sign-up, no UI).\n"
                "- Mix the complexity by the number of tool calls a solution needs: easy 1-2, medium 3-5, "
                "hard 6-10, very_hard 11+ (stay under 20 calls).\n- Some tasks read before they write "
                "(find an id first), some change several records together, some need the agent to "
                "notice something (sold out, expired, not allowed).\n- At least one task has refusing or "
                "reporting as the right answer (set expects_refusal); its success is that nothing changes.\n"
                "- Not already done in a fresh database.\nAnswer JSON: "
                '{"tasks": [{"id": "snake_case", "instruction", "complexity", "solution_plan": ["step", ...], '
                '"expects_refusal", "success_criteria": [...], "failure_criteria": [...]}]}.'
            ),
        ),
    ]


def _tasks_block(tasks: list[TaskDraft]) -> str:
    return "\n".join(f"- {t.id} [{t.complexity}]: {t.instruction}" for t in tasks)


# -- database ---------------------------------------------------------------------------------------------


def schema_prompt(
    scenario: Scenario, tasks: list[TaskDraft], user_id: int, now: datetime
) -> list[Message]:
    return [
        _system("You design SQLite schemas for application backends.", user_id, now),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nTasks the database must support:\n{_tasks_block(tasks)}\n\n"
                "Write the SQLite DDL: CREATE TABLE statements (a users table among them), primary keys "
                "named <entity>_id, FOREIGN KEY clauses for every reference, NOT NULL / CHECK / UNIQUE "
                "constraints that encode the rules, and useful CREATE INDEX statements. No clock "
                "defaults (no CURRENT_TIMESTAMP). Only what the tasks need, and real enough that "
                "wrong actions are possible. Answer with one ```sql block."
            ),
        ),
    ]


def data_prompt(
    scenario: Scenario, tasks: list[TaskDraft], schema: DatabaseSchema, user_id: int, now: datetime
) -> list[Message]:
    return [
        _system("You write realistic, consistent seed data for SQLite databases.", user_id, now),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nSchema:\n```sql\n{schema.sql()}```\n\nTasks:\n"
                f"{_tasks_block(tasks)}\n\nWrite INSERT statements in foreign-key order (parents first) "
                "with explicit ids, enough rows that every task has what it names and a search needs a "
                "second page sometimes, plus other users' data. Every task must be possible and none "
                f"already done. Times are literals relative to {now.isoformat()}; do not use 'now'. "
                "Escape quotes by doubling them (''), never with a backslash. Answer with one ```sql block."
            ),
        ),
    ]


# -- tools ----------------------------------------------------------------------------------------------


def spec_prompt(
    scenario: Scenario, tasks: list[TaskDraft], schema: DatabaseSchema, user_id: int, now: datetime
) -> list[Message]:
    return [
        _system(
            "You design the tool interface (an HTTP API) of an application for AI agents.",
            user_id,
            now,
        ),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nSchema:\n```sql\n{schema.sql()}```\n\nTasks:\n"
                f"{_tasks_block(tasks)}\n\nDesign only the tools these tasks need (and a get_current_time "
                "tool reporting the reference time). Search tools filter and paginate (limit, offset). "
                "Each tool: a snake_case `name` (it becomes the operation_id), `method`, `path`, a "
                "`description` an agent can act on, typed `params` (name, type, location path|query|body, "
                "required, description, example taken from the seed data), the `response` shape, the "
                '`tables` it touches and the `tasks` it serves. Answer JSON: {"tools": [...]}.'
            ),
        ),
    ]


def code_prompt(
    scenario: Scenario, schema: DatabaseSchema, spec: ToolInterfaceSpec, user_id: int, now: datetime
) -> list[Message]:
    tools = json.dumps(spec.model_dump(mode="json")["tools"], indent=1)
    return [
        _system("You write the backend of an application as one Python module.", user_id, now),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nSchema:\n```sql\n{schema.sql()}```\n\nTools:\n{tools}\n\n"
                "Write app.py: FastAPI + SQLAlchemy 2 (DeclarativeBase, Mapped) + Pydantic v2.\n"
                "- A module-level `app = FastAPI(...)` and a module-level dependency `get_db()` yielding a "
                "Session; routes reach the database only through `Depends(get_db)` (no global sessions, "
                "no global mutable state). Standing alone get_db may open a local file database.\n"
                "- One route per tool, `operation_id` = the tool name, the docstring = the description.\n"
                f"- REFERENCE_TIME = {now.isoformat()!r} and USER_ID = {user_id} as constants; never "
                "the wall clock.\n- Check inputs against the state and raise HTTPException(404/409/403/400, "
                "detail) saying what was wrong and what to do instead. Writes commit; a failed call "
                "changes nothing.\nAnswer with one ```python block."
            ),
        ),
    ]


def verifiers_prompt(
    scenario: Scenario,
    tasks: list[TaskDraft],
    schema: DatabaseSchema,
    seed: SeedData,
    spec: ToolInterfaceSpec,
    user_id: int,
    now: datetime,
) -> list[Message]:
    tools = "\n".join(
        f"- {t.name}({', '.join(p.name + ':' + p.type for p in t.params)}): {t.description}"
        for t in spec.tools
    )
    return [
        _system("You write verifiers that decide whether an agent completed a task.", user_id, now),
        Message(
            role="user",
            content=(
                f"{_scenario_block(scenario)}\n\nSchema:\n```sql\n{schema.sql()}```\n\nSeed data:\n"
                f"```sql\n{seed.sql()[:6000]}```\n\nTools:\n{tools}\n\nTasks:\n{_tasks_block(tasks)}\n\n"
                "Write verifiers.py. For each task one function `verify_<task_id>(initial, final, "
                "final_answer) -> dict` taking two read-only sqlite3 connections (before and after the "
                'episode) and the agent\'s final answer; it returns {"complete": bool, "evidence": {...}}.\n'
                "- Compare before and after: the intended change happened AND nothing else changed.\n"
                "- Accept every correct solution (check the end state, not the path; ignore case and "
                "whitespace in free text).\n- Read-only and refusal tasks are judged on the final answer "
                "and on nothing having changed.\n- Deterministic, no writes, no network.\n"
                'Also define a module-level literal `SOLUTIONS = {task_id: {"verifier": name, '
                '"reference_solution": [{"tool", "arguments"}], "reference_answer": str|None, '
                '"wrong_solution": {"description", "solution": [...], "final_answer"}}}` '
                "with concrete arguments from the seed data: the reference solution must complete the "
                "task, the wrong one must not. Answer with one ```python block."
            ),
        ),
    ]
