"""Stage: conversations. Turn a shipped bundle's proven tasks into conversational variants.

For each chosen task the model writes a ``user`` section
(:class:`awm_core.models.UserSection`): the opening the agent gets, the facts that
move out of the instruction into the user's hidden facts, the scripted replies and the
reference agent's messages placed among the task's own reference calls. The variant
keeps the task's verifier and reference solution, so its database outcome is already
proven; what this stage adds is checked by code, the same code that grades agents
(:mod:`awm_core.conversation`): the reference conversation passes the communication
checks, and two wrong conversations derived from it (the agent guesses instead of
asking; it acts before the user said yes) do not. Failed checks go back to the model
(self-correction, like every stage); the accepted variants are appended to the
bundle's ``tasks.json`` as ``conv_<task id>`` with those wrong conversations as
negative examples, ready for ``awm envs validate``.

It runs after packaging (``awm synth conversations --out RUN``), checkpointed per
scenario like the other stages and replayable offline from
``awm_synth/replay/<scenario>/conversations.<attempt>.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from awm_core.atomic import atomic_write_text
from awm_core.conversation import (
    STOP_TOKEN,
    check_communication,
    is_stop,
    scripted_events,
)
from awm_core.llm.base import LLMError
from awm_core.models import AgentMessage, Message, NegativeExample, Scenario, Task, UserSection
from awm_synth.config import SynthConfig
from awm_synth.errors import SynthError
from awm_synth.llm.client import SynthLLM
from awm_synth.llm.parsing import parse_json_model
from awm_synth.stages.base import ScenarioContext, corrected_stage
from awm_synth.stages.correction import CheckResult
from awm_synth.store.checkpoint import RunDir
from awm_synth.store.records import StageRecord

STAGE = "conversations"
PREFIX = "conv_"


class ConversationDraft(BaseModel):
    """The model's proposal for one task: which task, and its user."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    user: UserSection


class ConversationSet(BaseModel):
    """The stage's artifact: the proposed variants."""

    model_config = ConfigDict(extra="ignore")

    variants: list[ConversationDraft] = Field(default_factory=list)


def conversations_prompt(tasks: list[Task], wanted: int) -> list[Message]:
    """Ask for ``wanted`` conversational variants of ``tasks`` (their reference calls shown)."""
    listing = [
        {
            "task_id": t.id,
            "instruction": t.instruction,
            "reference_calls": [s.model_dump(mode="json") for s in t.reference_solution or []],
        }
        for t in tasks
    ]
    system = (
        "You turn single-instruction tasks for a tool-using agent into conversations with a "
        "simulated user. In the conversation the agent is told only a short opening message; "
        "the specifics it needs (ids, names, amounts, choices) are facts only the user knows "
        "and gives when asked. Answer with one JSON object and nothing else."
    )
    user = f"""Tasks (with the tool calls that solve each one):
{json.dumps(listing, indent=1, ensure_ascii=False)}

Write conversational variants of {wanted} of these tasks (prefer tasks that change data).
For each, a JSON object {{"task_id": ..., "user": {{...}}}} where "user" has:
- "opening": the user's first message; it must NOT contain any hidden fact's value;
- "goal": what the user wants, in their words; "persona": one short line;
- "hidden_facts": [{{"name", "value", "argument"}}]: each fact the user holds back;
  "argument" is the tool argument of a reference call that carries exactly "value"
  (omit it when the value is not passed verbatim to a tool);
- "accepts", "refuses": short lists; "ends_when": when the user is satisfied;
- "reference_messages": [{{"after_calls": K, "text": ...}}]: what a good agent says to the
  user, each placed after K of the reference calls: ask for the hidden facts first, and
  before any call that changes data, say what it will do and ask for a yes;
- "replies": the user's answer to each reference message, in order; the last one ends
  with {STOP_TOKEN};
- "must_tell": [{{"fact", "pattern"}}]: what the agent must tell the user (pattern: a regex);
- "confirm_before": the names of the reference calls that change data.

Reply as {{"variants": [...]}}."""
    return [Message(role="system", content=system), Message(role="user", content=user)]


def _ordered(user: UserSection) -> list[AgentMessage]:
    """The reference messages in conversation order (the order replies answer them)."""
    return sorted(user.reference_messages, key=lambda m: m.after_calls)


def wrong_conversations(task: Task, user: UserSection) -> list[NegativeExample]:
    """The wrong conversations a variant must reject: guessing (nothing asked, the facts used
    anyway) and, with ``confirm_before``, acting before the user said yes."""
    steps = task.reference_solution or []
    ordered, replies = _ordered(user), list(user.replies or [])
    closing = [m for m in ordered if m.after_calls >= len(steps)] or [
        AgentMessage(after_calls=len(steps), text="Done.")
    ]
    out = [
        NegativeExample(
            description="Guesses what only the user knows instead of asking",
            solution=steps,
            messages=closing[-1:],
            replies=["OK. " + STOP_TOKEN],
        )
    ]
    confirmed = [i for i, s in enumerate(steps) if s.tool in user.confirm_before]
    if confirmed and ordered:
        first = confirmed[0]
        keep = [0, *(i for i, m in enumerate(ordered) if m.after_calls > first and i > 0)]
        out.append(
            NegativeExample(
                description="Acts before asking: makes the change without the user's yes",
                solution=steps,
                messages=[ordered[i] for i in keep],
                replies=[replies[i] for i in keep if i < len(replies)],
            )
        )
    return out


def check_conversations(tasks: dict[str, Task], drafts: ConversationSet) -> CheckResult:
    """Code checks of every variant (see the module docstring); a failed one says what to fix."""
    result = CheckResult(total=max(len(drafts.variants), 1))
    if not drafts.variants:
        result.add("no_variants", "the answer has no variants")
        return result
    seen: set[str] = set()
    for draft in drafts.variants:
        task = tasks.get(draft.task_id)
        where = f"variant of {draft.task_id!r}"
        if task is None:
            result.add("unknown_task", f"{where}: no such task; pick from {sorted(tasks)}")
            continue
        if draft.task_id in seen:
            result.add("duplicate_variant", f"{where}: the task has two variants")
        seen.add(draft.task_id)
        for problem in _variant_problems(task, draft.user):
            result.add(problem[0], f"{where}: {problem[1]}")
    return result


def _variant_problems(task: Task, user: UserSection) -> list[tuple[str, str]]:
    steps = task.reference_solution or []
    problems: list[tuple[str, str]] = []
    if not user.hidden_facts:
        problems.append(("no_hidden_facts", "give the user at least one hidden fact"))
    for fact in user.hidden_facts:
        if fact.value.lower() in user.opening.lower():
            problems.append(("opening_reveals", f"the opening gives away {fact.name!r}"))
        if fact.argument is not None and not any(
            str(s.arguments.get(fact.argument, "")).lower() == fact.value.lower() for s in steps
        ):
            problems.append(
                (
                    "fact_not_used",
                    f"no reference call passes {fact.value!r} as {fact.argument!r}; "
                    "fix the value or drop the argument",
                )
            )
    tools = {s.tool for s in steps}
    for tool in user.confirm_before:
        if tool not in tools:
            problems.append(("unknown_confirm", f"confirm_before names {tool!r}, not a call"))
    replies = user.replies or []
    if len(replies) < len(user.reference_messages):
        problems.append(("missing_replies", "write one reply per reference message"))
    elif replies and not is_stop(replies[len(user.reference_messages) - 1]):
        problems.append(("no_stop", f"the reply to the last message must end with {STOP_TOKEN}"))
    variant = task.model_copy(update={"user": user})
    events = scripted_events(user.opening, steps, user.reference_messages, replies)
    talk = check_communication(variant, events)
    if not talk.passed:
        problems.append(
            ("reference_fails_checks", f"the reference conversation fails: {talk.evidence()}")
        )
    for wrong in wrong_conversations(task, user):
        events = scripted_events(
            user.opening, wrong.solution, wrong.messages or [], wrong.replies or []
        )
        if check_communication(variant, events).passed:
            problems.append(
                (
                    "wrong_conversation_passes",
                    f"{wrong.description!r} passes the checks: add hidden facts with the "
                    "argument that carries them, or confirm_before for the writes",
                )
            )
    return problems


def conversational_variants(tasks: dict[str, Task], drafts: ConversationSet) -> list[Task]:
    """The accepted variants as tasks: the task's proof plus its user and wrong conversations."""
    out = []
    for draft in drafts.variants:
        task = tasks.get(draft.task_id)
        if task is None or _variant_problems(task, draft.user):
            continue  # the tolerated failures of an accepted answer are not shipped
        out.append(
            task.model_copy(
                update={
                    "id": PREFIX + task.id,
                    "user": draft.user,
                    "negative_examples": [
                        *task.negative_examples,
                        *wrong_conversations(task, draft.user),
                    ],
                    "tags": [*task.tags, "conversational"],
                }
            )
        )
    return out


def bundle_tasks(bundle: Path) -> list[Task]:
    """The tasks of a bundle folder."""
    raw = json.loads((bundle / "tasks.json").read_text(encoding="utf-8"))
    return [Task.model_validate(t) for t in raw]


def candidates(tasks: list[Task]) -> dict[str, Task]:
    """Tasks a variant can be made of: proven by a reference, no refusal, not a variant."""
    return {
        t.id: t for t in tasks if t.reference_solution and not t.expects_refusal and t.user is None
    }


async def run(ctx: ScenarioContext, bundle: Path, wanted: int) -> StageRecord:
    """Ask for ``wanted`` variants of ``bundle``'s tasks, self-correcting on the code checks."""
    tasks = candidates(bundle_tasks(bundle))
    return await corrected_stage(
        ctx,
        STAGE,
        conversations_prompt(list(tasks.values()), wanted),
        lambda raw: parse_json_model(raw, ConversationSet),
        lambda drafts: check_conversations(tasks, drafts),
        0.0,
    )


def add_variants(bundle: Path, drafts: ConversationSet) -> list[str]:
    """Append the accepted variants to ``bundle``'s tasks.json (replacing earlier ones of the
    same id); returns their ids."""
    tasks = bundle_tasks(bundle)
    variants = conversational_variants(candidates(tasks), drafts)
    ids = {v.id for v in variants}
    kept = [t for t in tasks if t.id not in ids]
    text = json.dumps(
        [t.model_dump(mode="json", exclude_defaults=True) for t in [*kept, *variants]], indent=2
    )
    atomic_write_text(bundle / "tasks.json", text + "\n")
    return sorted(ids)


async def run_conversations(
    run_dir: RunDir, llm: SynthLLM, config: SynthConfig, wanted: int
) -> dict[str, dict[str, Any]]:
    """The stage over a run's shipped bundles: ``{scenario: {"added": ids, "error": why}}``.

    Each scenario's answer is checkpointed (``envs/<scenario>/conversations.json``), so a
    second call reuses it; a scenario whose model fails (no recording, an endpoint down) is
    reported and tried again next time. Every bundle still loads in the runtime after the
    change (:class:`awm_synth.errors.SynthError` names the one that does not).
    """
    from awm_envs import load_environment

    outcome: dict[str, dict[str, Any]] = {}
    for name in run_dir.scenario_names():
        status = run_dir.load_status(name)
        if status is None or status.status != "shipped" or status.bundle is None:
            continue
        bundle = run_dir.root / status.bundle
        record = run_dir.load_stage(name, STAGE)
        if record is None:
            scenario = Scenario(name=name, description=name)
            ctx = ScenarioContext(scenario=scenario, llm=llm, config=config)
            try:
                record = await run(ctx, bundle, wanted)
            except (LLMError, SynthError) as exc:  # not checkpointed: the next run retries
                outcome[name] = {"added": [], "error": f"{type(exc).__name__}: {exc}"}
                continue
            run_dir.save_stage(record)
        if not record.accepted or record.artifact is None:
            last = record.attempts[-1].errors[:3] if record.attempts else []
            outcome[name] = {"added": [], "error": "; ".join(last) or "no usable answer"}
            continue
        added = add_variants(bundle, ConversationSet.model_validate(record.artifact))
        outcome[name] = {"added": added, "error": None}
        try:
            load_environment(bundle)
        except Exception as exc:  # the runtime's own check of the tasks against the tools
            raise SynthError(f"{bundle} no longer loads after adding conversations: {exc}") from exc
    return outcome
