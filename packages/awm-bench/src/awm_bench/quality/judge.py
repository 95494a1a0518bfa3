"""The judges: ``checks`` rates from the evidence alone; an LLM judge asks a model, with retries."""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import ValidationError

from awm_bench.quality.evidence import TaskEvidence, clip, evidence_summary, render_evidence
from awm_bench.quality.ratings import CRITERIA, QualityScores, TaskQuality
from awm_core import get_backend
from awm_core.llm import LLMBackend, LLMError, LLMOutputError
from awm_core.llm.extract import parse_json_text
from awm_core.llm.structured import (
    Attempts,
    UnusableAnswerError,
    chat_until_valid,
    json_schema_format,
)
from awm_core.models import Message

SYSTEM_PROMPT = """\
You audit tasks of a database-backed tool-use environment that will train AI agents. \
An agent can act only through the listed tools, on the seeded database shown. Rate the \
task on three criteria, each an integer from 1 (not at all) to 5 (fully):

- task_feasibility: can an agent complete the task with exactly these tools and this \
data? 1 = impossible or contradictory, 3 = possible only with guesses, 5 = clearly doable. \
For a task whose intended outcome is a refusal, rate whether the refusal is well founded.
- data_alignment: does the seeded database contain the records, names, dates and \
amounts the task refers to, consistent with what it says? An entity reported NOT FOUND \
lowers this score unless the task is meant to be refused because of it.
- toolset_completeness: do the tools cover every read and write the task needs \
(finding ids, changing each record)? A reference step using a tool the environment \
does not have means a gap.

Use the evidence: tool list, tables, lookups, reference solution and its replay. \
Reply with one JSON object and nothing else, exactly these keys:
{"task_feasibility": <1-5>, "data_alignment": <1-5>, "toolset_completeness": <1-5>, \
"reasoning": "<one to three sentences citing the evidence>"}"""


class ChecksJudge:
    """Rates from the evidence alone, without a model (the offline default).

    feasibility: the reference solution's replay (5 completed, 1 not; 3 without a
    reference); data alignment: the share of named entities found in the database
    (a refusal task's missing entity is not held against it); toolset completeness:
    1 when the reference uses a tool the environment lacks, else 5 (3 without one).
    """

    name = "checks"

    async def rate(self, ev: TaskEvidence) -> TaskQuality:
        why: list[str] = []
        task = ev.task
        if not task.reference_solution and not task.expects_refusal:
            feas, tools = 3, 3
            why.append("no reference solution, so feasibility is unproven")
        else:
            tools = 1 if ev.missing_tools else 5
            if ev.missing_tools:
                why.append(f"the reference uses missing tool(s) {', '.join(ev.missing_tools)}")
            if ev.replay is None:
                feas = 4 if not ev.missing_tools else 1
                why.append("reference solution not replayed")
            elif ev.replay == "Completed" and ev.replay_env_errors:
                feas = 2  # the verifier is satisfied, but the intended path meets a broken tool
                why.append(
                    f"the reference replay completes but hits {len(ev.replay_env_errors)} "
                    f"environment error(s): {clip(ev.replay_env_errors[0], 120)}"
                )
            elif ev.replay == "Completed":
                feas = 5
                why.append(
                    f"the reference solution's {len(ev.reference_tools)} call(s) replay to Completed"
                )
            else:
                feas = 1
                why.append(f"the reference solution replays to {ev.replay}")
        found = [lk for lk in ev.lookups if lk.found]
        missing = [lk.text for lk in ev.lookups if not lk.found]
        if not ev.lookups:
            align: int | None = None
            why.append("the task names no entity to look up")
        elif task.expects_refusal or not missing:
            align = 5
            why.append(f"{len(found)}/{len(ev.lookups)} named entities found in the data")
        else:
            align = 1 + round(4 * len(found) / len(ev.lookups))
            why.append(f"not found in the data: {', '.join(repr(m) for m in missing)}")
        return TaskQuality(
            env_id=ev.env_id,
            task_id=task.id,
            complexity=task.complexity.value,
            expects_refusal=task.expects_refusal,
            scores={
                "task_feasibility": feas,
                "data_alignment": align,
                "toolset_completeness": tools,
            },
            reasoning="; ".join(why) + ".",
            judge=self.name,
            evidence=evidence_summary(ev),
        )


class LLMQualityJudge:
    """Asks a model (any awm backend) for the three ratings and validates its JSON.

    A reply that is not the requested object is sent back with the problem, up to
    ``max_attempts`` times; a task the model never answers usably (or a backend
    error) comes back with ``error`` set and no scores, so one bad answer never
    discards the report.
    """

    def __init__(
        self,
        model: str | LLMBackend,
        *,
        max_attempts: int = 3,
        temperature: float | None = 0.0,
        max_tokens: int | None = 600,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.backend = (
            get_backend(model, **(backend_options or {})) if isinstance(model, str) else model
        )
        self.name = f"llm:{self.backend.name}"
        self.max_attempts = max_attempts
        self.temperature = temperature
        self.max_tokens = max_tokens

    def messages(self, ev: TaskEvidence) -> list[Message]:
        """The conversation sent for ``ev`` (system rules + the evidence)."""
        return [
            Message(role="system", content=SYSTEM_PROMPT),
            Message(role="user", content=render_evidence(ev)),
        ]

    async def rate(self, ev: TaskEvidence) -> TaskQuality:
        base = TaskQuality(
            env_id=ev.env_id,
            task_id=ev.task.id,
            complexity=ev.task.complexity.value,
            expects_refusal=ev.task.expects_refusal,
            scores=dict.fromkeys(CRITERIA),
            reasoning="",
            judge=self.name,
            evidence=evidence_summary(ev),
        )
        chat = partial(
            self.backend.chat,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            response_format=json_schema_format(QualityScores, strict=False),
        )
        attempts = Attempts()
        try:
            scores, _ = await chat_until_valid(
                chat,
                self.messages(ev),
                _parse_scores,
                max_attempts=self.max_attempts,
                answer_again='Answer again with only the JSON object {"task_feasibility": 1-5, '
                '"data_alignment": 1-5, "toolset_completeness": 1-5, "reasoning": "..."}.',
                attempts=attempts,
            )
        except UnusableAnswerError as exc:
            base.error = str(exc)
        except LLMError as exc:
            base.error = f"the judge's model failed: {exc}"
        else:
            base.scores = {c: getattr(scores, c) for c in CRITERIA}
            base.reasoning = scores.reasoning
        base.attempts, base.malformed_replies = attempts.count, attempts.problems
        return base


def _parse_scores(text: str) -> QualityScores:
    """The reply's ratings; ValueError saying what is wrong with an unusable reply."""
    try:
        return QualityScores.model_validate(parse_json_text(text))
    except (LLMOutputError, ValidationError) as exc:
        raise ValueError(_describe_problem(exc)) from exc


def _describe_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errs = [
            f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
            for e in exc.errors()[:4]
        ]
        return "the JSON does not match the requested object (" + "; ".join(errs) + ")"
    return str(exc)[:300]


QualityJudge = ChecksJudge | LLMQualityJudge


def make_judge(model: str | LLMBackend | None) -> QualityJudge:
    """``None`` or ``"checks"``: the model-free judge; anything else: an LLM judge on that backend."""
    if model is None or model == "checks":
        return ChecksJudge()
    return LLMQualityJudge(model)
