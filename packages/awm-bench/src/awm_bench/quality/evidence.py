"""What the judge is shown about one task, gathered from the environment and rendered as text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from awm_bench.quality.database import EnvData, TableInfo
from awm_bench.quality.entities import extract_literals, singular, tokens
from awm_core.argcheck import signature
from awm_core.models import Task, ToolSpec


def proof_text(record: dict[str, Any] | None) -> str:
    """A validation record (:func:`awm_envs.validation_record`) in words."""
    if record is None:
        return "not validated (no `awm envs validate` record for this bundle content)"
    state = "every task proven" if record.get("passed") else "validation FAILED"
    return (
        f"{state}: {record.get('proven')}/{record.get('tasks')} tasks proven solvable and "
        f"not already solved ({record.get('source')} record)"
    )


@dataclass
class LiteralLookup:
    """One entity of the task looked up in the seeded database."""

    text: str
    tables: dict[str, int]  # table -> matching rows

    @property
    def found(self) -> bool:
        """Whether any table holds it."""
        return bool(self.tables)


@dataclass
class TaskEvidence:
    """Everything the judge is shown about one task."""

    env_id: str
    task: Task
    tools: list[ToolSpec]
    lookups: list[LiteralLookup]
    quoted: list[str]
    tables: list[tuple[TableInfo, list[dict[str, Any]]]]
    all_tables: dict[str, int]
    reference_tools: list[str]
    missing_tools: list[str]
    proof: str
    replay: str | None  # the reference replay's verdict label, when it was replayed
    replay_env_errors: list[str] = field(default_factory=list)  # "tool: message" per env error


def gather_evidence(
    data: EnvData,
    task: Task,
    replay: str | None = None,
    *,
    replay_env_errors: Sequence[str] = (),
    max_tables: int = 5,
) -> TaskEvidence:
    """The evidence for ``task``: lookups of its entities, related tables, tools and proof."""
    literals, quoted = extract_literals(task.instruction)
    # what the reference solution sends: a name it writes is an input, not missing data
    sent = json.dumps([s.arguments for s in task.reference_solution or []]).lower()
    lookups: list[LiteralLookup] = []
    matched_rows: dict[str, list[dict[str, Any]]] = {}
    for lit in literals:
        hits = data.find(lit)
        if not hits and lit.lower() in sent:
            quoted.append(lit)
            continue
        lookups.append(LiteralLookup(lit, {t: n for t, n, _ in hits}))
        for table, _, rows in hits:
            matched_rows.setdefault(table, [])
            matched_rows[table] += [r for r in rows if r not in matched_rows[table]][:3]
    ref_tools = [s.tool for s in task.reference_solution or []]
    words = tokens(task.instruction) | tokens(" ".join(ref_tools).replace("_", " "))
    generic = {"item", "id", "log", "entry", "record", "map", "link"}
    named = [
        t
        for t in data.tables
        if t not in matched_rows and ({singular(p) for p in t.split("_")} - generic) & words
    ]
    chosen = list(matched_rows) + named
    tables = [
        (data.tables[t], (matched_rows.get(t) or data.sample(t))[:3]) for t in chosen[:max_tables]
    ]
    return TaskEvidence(
        env_id=data.env_id,
        task=task,
        tools=data.tools,
        lookups=lookups,
        quoted=quoted,
        tables=tables,
        all_tables={t.name: t.rows for t in data.tables.values()},
        reference_tools=ref_tools,
        missing_tools=sorted({t for t in ref_tools if t not in data.tool_names}),
        proof=proof_text(data.proof),
        replay=replay,
        replay_env_errors=list(replay_env_errors),
    )


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut."""
    return text if len(text) <= limit else f"{text[:limit]}…(+{len(text) - limit} chars)"


def render_evidence(ev: TaskEvidence, *, max_tools: int = 80) -> str:
    """The judge's user message: each part under a ``## `` heading."""
    task = ev.task
    parts = [f"## Task ({task.id}, {task.complexity.value})\n{task.instruction}"]
    if task.expects_refusal:
        parts.append(
            "## Note\nThe intended outcome of this task is to change nothing and explain why it "
            "cannot be done; judge whether the data and tools let an agent establish that."
        )
    if task.success_criteria:
        parts.append("## Success criteria\n" + "\n".join(f"- {c}" for c in task.success_criteria))
    tools = [
        f"- {signature(t.name, t.input_schema)}: {clip((t.description or '').strip().splitlines()[0] if t.description else '', 140)}"
        for t in ev.tools[:max_tools]
    ]
    if len(ev.tools) > max_tools:
        tools.append(f"… {len(ev.tools) - max_tools} more tool(s) omitted")
    parts.append(f"## Tools ({len(ev.tools)})\n" + "\n".join(tools))
    parts.append(
        "## Database tables (rows)\n" + ", ".join(f"{n} ({c})" for n, c in ev.all_tables.items())
    )
    if ev.lookups or ev.quoted:
        lines = []
        for lk in ev.lookups:
            where = ", ".join(f"{t} ({n} row{'s' if n != 1 else ''})" for t, n in lk.tables.items())
            lines.append(
                f"- {lk.text!r}: "
                + (f"found in {where}" if lk.found else "NOT FOUND in any text column")
            )
        lines += [f"- {q!r}: a value the task writes (not looked up)" for q in ev.quoted]
        parts.append(
            "## Entities the task names, looked up in the seeded database\n" + "\n".join(lines)
        )
    for table, rows in ev.tables:
        sample = "\n".join(clip(json.dumps(r, ensure_ascii=False, default=str), 400) for r in rows)
        parts.append(
            f"## Table {table.name} ({table.rows} rows)\n{clip(table.sql.strip(), 900)}\n"
            f"Sample rows:\n{sample or '(empty)'}"
        )
    if task.reference_solution:
        steps = [
            f"{i}. {s.tool}({clip(json.dumps(s.arguments, ensure_ascii=False), 200)})"
            for i, s in enumerate(task.reference_solution, 1)
        ]
        ref = "\n".join(steps)
        if ev.missing_tools:
            ref += (
                f"\nTools it uses that the environment does NOT have: {', '.join(ev.missing_tools)}"
            )
        if task.reference_answer:
            ref += f"\nReference answer: {clip(task.reference_answer, 300)}"
        if ev.replay is not None:
            ref += f"\nReplayed against the environment just now: {ev.replay}"
            for err in ev.replay_env_errors:
                ref += f"\n  environment error during the replay: {clip(err, 300)}"
        parts.append("## Reference solution\n" + ref)
    else:
        parts.append("## Reference solution\n(none: the task is not proven solvable)")
    parts.append(f"## Validation\n{ev.proof}")
    parts.append(
        "## Your answer\nReply with one JSON object: "
        '{"task_feasibility": 1-5, "data_alignment": 1-5, "toolset_completeness": 1-5, '
        '"reasoning": "..."}'
    )
    return "\n\n".join(parts)


def evidence_summary(ev: TaskEvidence) -> dict[str, Any]:
    """What a rating records of its evidence (the report's ``evidence`` per task)."""
    return {
        "entities_found": [lk.text for lk in ev.lookups if lk.found],
        "entities_not_found": [lk.text for lk in ev.lookups if not lk.found],
        "tables": [t.name for t, _ in ev.tables],
        "reference_calls": len(ev.reference_tools),
        "missing_tools": ev.missing_tools,
        "replay": ev.replay,
        "replay_env_errors": ev.replay_env_errors,
    }
