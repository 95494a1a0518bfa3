"""What ``awm view`` shows, as rich text: the episode list and one episode in full.

An episode is a list of :class:`Block` s (a title and a body): the summary, every
message in order (the model's raw text for each turn, with the parsed call and
the format check it failed, each tool result whole), the final answer, the
verdict, the verifier's result and evidence, and the database diff. ``--print``
writes the blocks one after the other; the terminal browser shows each in a box.
Nothing is cut: a 10 000-character tool result is 10 000 characters here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.conversation import SEND_MESSAGE_TO_USER, SIMULATED_USER
from awm_core.view.episodes import COMPLETED, Episode, VerdictView

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod, OverflowMethod
    from rich.table import Table
    from rich.text import Text

    from awm_core.models import StepRecord, ToolCall

__all__ = [
    "Block",
    "Column",
    "episode_blocks",
    "episode_columns",
    "fit_table",
    "label_style",
    "print_episode",
    "print_listing",
]

CALL_TOOL = "call_tool"


@dataclass
class Block:
    """One titled part of an episode; ``kind`` says what it is (``model``, ``tool``, ...)."""

    kind: str
    title: str
    body: Text
    failed: bool = False


def label_style(label: str) -> str:
    """Green for Completed, red for any other verdict, dim when not judged."""
    if label == COMPLETED:
        return "green"
    return "dim" if label in ("-", "") else "red"


def _pretty(value: Any) -> str:
    """A tool result or evidence in full: JSON laid out (see :func:`_json`), other text as is."""
    if isinstance(value, str):
        text = value
        if text.strip()[:1] not in ("{", "["):
            return text
        try:
            value = json.loads(text)
        except ValueError:
            return text
    return _json(value)


JSON_WIDTH = 88


def _json(value: Any, column: int = 0, indent: int = 0) -> str:
    """JSON with each object or list on one line when it fits in :data:`JSON_WIDTH`
    columns (``column``: where it starts), else one member a line, indented."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if not isinstance(value, dict | list) or not value or column + len(flat) <= JSON_WIDTH:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        members = []
        for key, item in value.items():
            head = f"{pad}{json.dumps(str(key), ensure_ascii=False)}: "
            members.append(head + _json(item, len(head), indent + 2))
    else:
        members = [pad + _json(item, len(pad), indent + 2) for item in value]
    close = "}" if isinstance(value, dict) else "]"
    return ("{" if close == "}" else "[") + "\n" + ",\n".join(members) + "\n" + " " * indent + close


def _call_text(call: ToolCall) -> str:
    args = call.arguments
    if call.name == CALL_TOOL and "tool_name" in args:
        inner = args.get("arguments", {})
        inner_text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        return f"call_tool → {args.get('tool_name')} {inner_text}"
    return f"{call.name} {json.dumps(args, ensure_ascii=False, default=str)}"


def _reward_text(verdict: VerdictView | None) -> str:
    if verdict is None or verdict.reward is None:
        return "-"
    return f"{verdict.reward:+.1f}"


# --------------------------------------------------------------------------- one episode


def _summary(ep: Episode) -> Block:
    from rich.text import Text

    t = ep.trajectory
    body = Text()
    body.append(f"env: {t.env_id}   task: {t.task_id}")
    if ep.complexity:
        body.append(f"   complexity: {ep.complexity}")
    body.append("\n")
    meta = t.metadata
    who = [f"policy: {ep.policy}"] if ep.policy else []
    who += [f"format: {meta['format']}"] if meta.get("format") else []
    who += [f"trial: {meta['trial']}"] if meta.get("trial") is not None else []
    if who:
        body.append("   ".join(who) + "\n")
    body.append("verdict: ")
    body.append(ep.label if ep.verdict is not None else "not judged", style=label_style(ep.label))
    body.append(f"   reward: {_reward_text(ep.verdict)}")
    if ep.verdict is not None and ep.verdict.judge:
        body.append(f"   judge: {ep.verdict.judge}")
    body.append("\nended by: ")
    ended_ok = t.termination.value == "final_answer"
    body.append(t.termination.value, style="green" if ended_ok else "red")
    if t.termination_reason:
        body.append(f" ({t.termination_reason})")
    body.append(
        f"\nsteps: {len(t.steps)}   tokens: {t.usage.prompt_tokens} prompt + "
        f"{t.usage.completion_tokens} completion"
    )
    if t.started_at and t.finished_at:
        body.append(f"   time: {(t.finished_at - t.started_at).total_seconds():.1f} s")
    where = f"{ep.source}:{ep.line}" if ep.line else str(ep.source)
    body.append(f"\nsource: {where}   (episode #{ep.index})")
    if ep.verdict is not None and ep.verdict.reasoning:
        body.append("\nwhy: ", style="bold")
        body.append(ep.verdict.reasoning)
    found = ep.violation
    if found is not None:
        step = t.steps[found[0]]
        body.append(
            f"\n\nstep {found[0]} failed the {found[1]} check; the model wrote:\n", "bold red"
        )
        body.append(_raw_text(step))
    return Block("summary", f"{t.env_id} / {t.task_id}", body, failed=ep.failed)


def _raw_text(step: StepRecord) -> str:
    """What the model wrote in this turn: its reasoning in ``<think>``, then its text."""
    msg = step.assistant
    parts = []
    if msg.reasoning:
        parts.append(f"<think>{msg.reasoning}</think>")
    if msg.content:
        parts.append(msg.content)
    for call in msg.tool_calls:  # native (OpenAI-format) calls arrive outside the text
        parts.append(f"[native tool call] {call.name} {json.dumps(call.arguments, default=str)}")
    return "\n".join(parts) if parts else "(the model wrote nothing)"


def _model_block(step: StepRecord, reason: str | None) -> Block:
    from rich.text import Text

    body = Text()
    msg = step.assistant
    if msg.reasoning:
        body.append("reasoning:\n", style="bold")
        body.append(msg.reasoning + "\n")
    body.append("text:\n", style="bold")
    body.append(msg.content if msg.content else "(empty)", style="" if msg.content else "dim")
    for call in msg.tool_calls:
        body.append("\nnative tool call: ", style="bold")
        body.append(f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, default=str)}")
    body.append("\nparsed: ", style="bold")
    if step.tool_call is not None:
        body.append(_call_text(step.tool_call), style="cyan")
    elif step.violation:
        body.append("no call could be read", style="red")
    elif step.result is not None:  # a conversational task: the turn went to the user
        body.append("no call: a message to the user")
    else:
        body.append("no call: a final answer")
    title = f"step {step.index} · model"
    if step.model_latency_s:
        title += f" · {step.model_latency_s:.2f} s"
    if step.usage.completion_tokens:
        title += f" · {step.usage.completion_tokens} tokens"
    if step.violation:
        title += f" · ✗ {step.violation}"
        body.append("\nviolation: ", style="bold red")
        prefix = f"step {step.index}: "
        detail = reason[len(prefix) :] if reason and reason.startswith(prefix) else step.violation
        body.append(detail, style="red")
    return Block("model", title, body, failed=bool(step.violation))


def _tool_block(step: StepRecord) -> Block | None:
    from rich.text import Text

    result = step.result
    if result is None:
        return None
    call = step.tool_call
    if call is None or call.name == SEND_MESSAGE_TO_USER:  # the simulated user's reply
        return Block("user", f"step {step.index} · the user replies", Text(_pretty(result.content)))
    name = call.name
    if call is not None and call.name == CALL_TOOL:
        name = str(call.arguments.get("tool_name") or name)
    title = f"step {step.index} · {name} result"
    if result.latency_s:
        title += f" · {result.latency_s * 1000:.1f} ms"
    if result.is_error:
        title += f" · error: {result.error_type or 'error'}"
    body = Text(_pretty(result.content), style="red" if result.is_error else "")
    return Block("tool", title, body, failed=result.is_error)


def _message_block(role: str, content: str) -> Block:
    from rich.text import Text

    title = {"system": "system prompt", "user": "user"}.get(role, role)
    return Block(role if role in ("system", "user") else "message", title, Text(content))


def _step_blocks(step: StepRecord, reason: str | None) -> list[Block]:
    blocks = [_model_block(step, reason)]
    tool = _tool_block(step)
    if tool is not None:
        blocks.append(tool)
    return blocks


def _message_blocks(ep: Episode) -> list[Block]:
    """Every message in order; an assistant turn and its tool answer come from the step record."""
    t = ep.trajectory
    reason = t.termination_reason
    assistant = [m for m in t.messages if m.role == "assistant"]
    if len(assistant) != len(t.steps):  # messages kept apart from steps: both, messages first
        out = [
            _message_block(m.role, m.content) for m in t.messages if m.role in ("system", "user")
        ]
        return out + [b for s in t.steps for b in _step_blocks(s, reason)]
    out = []
    steps = iter(t.steps)
    answered = False  # the last step's result stands for the tool message after it
    for m in t.messages:
        if m.role == "assistant":
            step = next(steps)
            out += _step_blocks(step, reason)
            answered = step.result is not None
        elif (m.role == "tool" or m.name == SIMULATED_USER) and answered:
            answered = False  # shown with its step
        else:
            out.append(_message_block(m.role, m.content))
    return out


def _verdict_blocks(ep: Episode) -> list[Block]:
    from rich.text import Text

    v = ep.verdict
    if v is None:
        return [
            Block(
                "verdict",
                "verdict",
                Text(f"not judged (awm verify run {ep.source} judges one)", style="dim"),
            )
        ]
    body = Text()
    body.append("label: ")
    body.append(v.label, style=label_style(v.label))
    body.append(f"\nreward: {_reward_text(v)}")
    if v.reward_reason:
        body.append(f" ({v.reward_reason})")
    if v.judge:
        body.append(f"\njudge: {v.judge}")
    body.append("\nreasoning:\n", style="bold")
    body.append(v.reasoning or "(none given)")
    for key, value in v.other.items():
        body.append(f"\n{key}: ", style="bold")
        body.append(_pretty(value))
    blocks = [Block("verdict", "verdict", body, failed=not v.completed)]
    if v.verification is not None:
        blocks.append(_verifier_block(v.verification))
    evidence = dict(v.evidence)
    if v.verification is not None and isinstance(evidence.get("verification"), dict):
        evidence.pop("verification")  # the same result, shown above
    if evidence:
        blocks.append(Block("evidence", "judge evidence", Text(_pretty(evidence))))
    blocks.append(_diff_block(v))
    return blocks


def _verifier_block(ver: dict[str, Any]) -> Block:
    from rich.text import Text

    body = Text()
    function = ver.get("function", "?")
    signature = f" ({ver['signature']})" if ver.get("signature") else ""
    body.append(f"function: {function}{signature}\n")
    complete = ver.get("complete")
    body.append("complete: ")
    body.append(str(complete), style="green" if complete else "red" if complete is False else "")
    if ver.get("duration_s"):
        body.append(f"   {float(ver['duration_s']):.2f} s")
    error = ver.get("error")
    if isinstance(error, dict):
        body.append(f"\nerror: {error.get('kind')}: {error.get('message')}", style="red")
        if error.get("traceback"):
            body.append("\n" + str(error["traceback"]), style="red")
    body.append("\nevidence:\n", style="bold")
    body.append(_pretty(ver.get("evidence") or {}))
    if ver.get("stdout"):
        body.append("\nstdout:\n", style="bold")
        body.append(str(ver["stdout"]))
    return Block("verifier", "verifier", body, failed=complete is False or bool(error))


def _diff_block(v: VerdictView) -> Block:
    from rich.text import Text

    if isinstance(v.diff, str):
        return Block("diff", "database diff", Text(v.diff))
    if isinstance(v.diff, dict):
        from awm_core.dbdiff import DatabaseDiff, RenderLimits

        try:
            diff = DatabaseDiff.model_validate(v.diff)
        except ValueError:
            return Block("diff", "database diff", Text(_pretty(v.diff)))
        whole = RenderLimits(max_rows_per_table=10**9, max_value_chars=10**9, max_chars=10**12)
        return Block("diff", "database diff", Text(diff.render(whole)))
    if v.diff_counts:
        counts = ", ".join(f"{k} {n}" for k, n in v.diff_counts.items() if n)
        return Block("diff", "database diff", Text(f"only counts were kept: {counts or 'none'}"))
    return Block(
        "diff",
        "database diff",
        Text("not kept with this verdict (only label, reward and reasoning were stored)", "dim"),
    )


def episode_blocks(ep: Episode, *, system: bool = True) -> list[Block]:
    """The whole episode, in order; ``system=False`` leaves out the system prompt."""
    from rich.text import Text

    t = ep.trajectory
    blocks = [_summary(ep)]
    blocks += [b for b in _message_blocks(ep) if system or b.kind != "system"]
    if t.final_answer is not None:
        blocks.append(Block("answer", "final answer", Text(t.final_answer or "(empty)")))
    end = Text(t.termination.value, style="green" if t.termination == "final_answer" else "red")
    if t.termination_reason:
        end.append(f"\n{t.termination_reason}", style="")
    blocks.append(Block("end", "how it ended", end, failed=t.termination != "final_answer"))
    return blocks + _verdict_blocks(ep)


def print_episode(ep: Episode, console: Console, *, system: bool = True) -> None:
    """Every block in full, a rule above each (plain text when piped)."""
    from rich.rule import Rule

    for block in episode_blocks(ep, system=system):
        console.print(Rule(block.title, style="red" if block.failed else "blue", align="left"))
        console.print(block.body, soft_wrap=True)
    console.print()


# --------------------------------------------------------------------------- the list


@dataclass
class Column:
    """A column of the episode list; the lowest ``keep`` is dropped first when too wide."""

    header: str
    keep: int
    justify: JustifyMethod = "left"


def episode_columns(episodes: Sequence[Episode]) -> list[Column]:
    """The list's columns, most useful first; complexity and source only when known."""
    cols = [
        Column("#", 9, "right"),
        Column("env", 9),
        Column("task", 10),
        Column("verdict", 8),
        Column("reward", 5, "right"),
        Column("ended by", 6),
        Column("steps", 3, "right"),
    ]
    if any(ep.complexity for ep in episodes):
        cols.append(Column("complexity", 4))
    if len({ep.source for ep in episodes}) > 1:
        cols.append(Column("source", 1))
    return cols


def episode_cells(ep: Episode, columns: Sequence[Column], root: Path | None = None) -> list[Any]:
    """One row of the list for ``columns`` (verdicts coloured)."""
    from rich.text import Text

    values: dict[str, Any] = {
        "#": str(ep.index),
        "env": ep.env_id,
        "task": ep.task_id,
        "verdict": Text(ep.label, style=label_style(ep.label)),
        "reward": _reward_text(ep.verdict),
        "ended by": Text(ep.ended_by, style="" if ep.ended_by == "final_answer" else "red"),
        "steps": str(len(ep.trajectory.steps)),
        "complexity": ep.complexity or "-",
        "source": _source(ep, root),
    }
    return [values[c.header] for c in columns]


def _source(ep: Episode, root: Path | None) -> str:
    if root is not None:
        try:
            return str(ep.source.relative_to(root))
        except ValueError:
            pass
    return str(ep.source)


def fit_table(episodes: Sequence[Episode], console: Console, *, root: Path | None = None) -> Table:
    """The episode list as a table no wider than the console: least useful columns go first."""
    from rich import box
    from rich.table import Table

    columns = episode_columns(episodes)

    def build(cols: list[Column]) -> Table:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
        for c in cols:
            overflow: OverflowMethod = "fold" if c.keep >= 8 else "ellipsis"
            table.add_column(c.header, justify=c.justify, overflow=overflow)
        for ep in episodes:
            table.add_row(*episode_cells(ep, cols, root))
        return table

    table = build(columns)
    unbounded = console.options.update_width(10**4)  # measure what the table wants
    while console.measure(table, options=unbounded).maximum > console.width:
        droppable = [c for c in columns if c.keep < 8]
        if not droppable:
            break  # ids are folded, never cut
        columns.remove(min(droppable, key=lambda c: c.keep))
        table = build(columns)
    return table


def print_listing(
    episodes: Sequence[Episode],
    shown: Sequence[Episode],
    console: Console,
    *,
    root: Path | None = None,
    filters: str = "",
) -> None:
    """The table of ``shown`` and a line on the whole run (completed/judged)."""
    if shown:
        console.print(fit_table(shown, console, root=root))
    judged = [ep for ep in episodes if ep.verdict is not None]
    passed = sum(ep.label == COMPLETED for ep in judged)
    line = f"{len(shown)} of {len(episodes)} episodes ({filters}); " if filters else ""
    if judged:
        line += f"{passed}/{len(judged)} completed"
    else:
        line += f"{len(episodes)} episode(s), not judged (awm verify run judges one)"
    failed = sum(ep.failed for ep in episodes)
    if failed and not filters:
        line += f", {failed} failed (--failed lists them)"
    console.print(line)
    console.print("show one in full with --index N (or --task ID); --full shows them all")
