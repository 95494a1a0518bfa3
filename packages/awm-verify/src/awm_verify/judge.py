"""Judges: turn a trajectory (and the database evidence) into one of the paper's four labels.

Three judges are registered through the ``register_judges`` hook:

``code``
    The verifier's verdict alone, no model call. ``complete`` -> Completed;
    not complete -> Partially Completed when the evidence says ``"partial": true``
    (or a ``progress`` strictly between 0 and 1), else Agent Error. A verifier that
    *failed* (exception, timeout, forbidden operation, ...) -> **Environment Error**:
    the verifier is part of the generated environment, and charging its bug to the
    agent would teach the policy noise (both labels give reward 0; the label keeps
    the statistics honest). A verifier that returns evidence but no verdict (the
    official ``verify_task``) cannot be judged by code alone: :class:`JudgeError`.
``llm``
    The model reads the task and the trajectory only (the paper's LLM-only baseline).
``code+llm`` (default)
    The paper's code-augmented judge: task, success/failure criteria, a compact
    trajectory, the state diff and the verifier's evidence in one prompt.

Model answers are parsed strictly (one JSON object, exactly ``label`` and
``reasoning``, a label from the four); a malformed answer is sent back with what
was wrong, up to ``max_attempts`` times, then :class:`JudgeOutputError`.

Judges are async. Each LLM judge bounds its in-flight model calls with one
semaphore shared by every call on it, so a trainer can start judging batch *k*
(``asyncio.create_task(judge_many(...))``) while it rolls out batch *k+1* without
flooding the endpoint.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

from awm_core import get_backend
from awm_core.contracts import Judge, JudgeRequest
from awm_core.errors import AWMError
from awm_core.llm import ChatResponse, LLMBackend, LLMError
from awm_core.llm.extract import unfence
from awm_core.llm.structured import UnusableAnswerError, chat_until_valid
from awm_core.models import Message, Verdict, VerdictLabel, VerifierResult
from awm_verify.judge_prompt import LABELS, SYSTEM_PROMPT, PromptLimits, build_user_prompt

MODEL_ENV_VAR = "AWM_JUDGE_MODEL"


class JudgeError(AWMError):
    """A judge could not reach a verdict (missing input, model failure)."""


class JudgeOutputError(JudgeError):
    """The judge model kept answering in a shape that cannot be parsed."""

    def __init__(self, message: str, last_reply: str) -> None:
        super().__init__(message)
        self.last_reply = last_reply


# --------------------------------------------------------------------------- code judge


def _is_partial(evidence: dict[str, Any]) -> bool:
    if evidence.get("partial") is True:
        return True
    progress = evidence.get("progress")
    return isinstance(progress, int | float) and not isinstance(progress, bool) and 0 < progress < 1


def _verification_summary(v: VerifierResult | None) -> dict[str, Any]:
    if v is None:
        return {}
    out: dict[str, Any] = {"function": v.function, "signature": v.signature, "complete": v.complete}
    if v.error is not None:
        out["error"] = {"kind": v.error.kind.value, "message": v.error.message}
    else:
        out["evidence"] = v.evidence
    return out


class CodeJudge:
    """The verifier's verdict alone (see the module docstring for the mapping)."""

    name = "code"

    def __init__(self, **options: Any) -> None:
        if options:
            raise TypeError(f"the code judge takes no options; got {', '.join(options)}")

    async def judge(self, request: JudgeRequest) -> Verdict:
        return self.decide(request)

    def decide(self, request: JudgeRequest) -> Verdict:
        """The synchronous decision (no I/O), also used by the code+llm judge's evidence."""
        v = request.verification
        if v is None:
            raise JudgeError(
                "the code judge needs a verifier result; run the task's verifier first "
                "(awm_verify.verify_episode does) or use the llm judge"
            )
        summary = {"verification": _verification_summary(v)}
        if v.error is not None:
            return Verdict(
                label=VerdictLabel.ENVIRONMENT_ERROR,
                reasoning=f"the verifier failed ({v.error.kind.value}): {v.error.message}",
                judge=self.name,
                evidence=summary,
            )
        if v.complete is None:
            raise JudgeError(
                f"verifier {v.function} ({v.signature}) returns evidence without a verdict, so "
                "the code judge cannot decide; use the code+llm judge"
            )
        if v.complete:
            label, why = VerdictLabel.COMPLETED, "the verifier found the task complete"
        elif _is_partial(v.evidence):
            label, why = VerdictLabel.PARTIALLY_COMPLETED, "the verifier found the task partly done"
        else:
            label, why = VerdictLabel.AGENT_ERROR, "the verifier found the task not complete"
        return Verdict(label=label, reasoning=why, judge=self.name, evidence=summary)


# --------------------------------------------------------------------------- LLM judges


def parse_judge_reply(text: str) -> tuple[VerdictLabel, str]:
    """Parse a judge model's answer strictly; raises ValueError saying what is wrong."""
    try:
        data = json.loads(unfence(text)[0])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not a JSON object ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise ValueError(f"the reply is JSON but a {type(data).__name__}, not an object")
    keys = set(data)
    if keys != {"label", "reasoning"}:
        missing = {"label", "reasoning"} - keys
        extra = keys - {"label", "reasoning"}
        problems = []
        if missing:
            problems.append(f"missing {', '.join(sorted(missing))}")
        if extra:
            problems.append(f"unexpected {', '.join(sorted(extra))}")
        raise ValueError(
            f"the object must have exactly 'label' and 'reasoning' ({'; '.join(problems)})"
        )
    label, reasoning = data["label"], data["reasoning"]
    if not isinstance(reasoning, str):
        raise ValueError("'reasoning' must be a string")
    if not isinstance(label, str):
        raise ValueError("'label' must be a string")
    normalised = " ".join(label.split()).lower()
    for known in VerdictLabel:
        if known.value.lower() == normalised:
            return known, reasoning
    raise ValueError(f"'label' is {label!r}; it must be one of: {', '.join(LABELS)}")


class LLMJudge:
    """Ask a model for the label; ``include_state`` adds the diff and verifier evidence."""

    name = "llm"
    include_state = False

    def __init__(
        self,
        *,
        model: str | LLMBackend | None = None,
        backend_options: dict[str, Any] | None = None,
        max_attempts: int = 3,
        max_concurrency: int = 16,
        temperature: float | None = None,
        max_tokens: int | None = 1024,
        limits: PromptLimits | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._backend_spec = model or os.environ.get(MODEL_ENV_VAR)
        if self._backend_spec is None:
            raise JudgeError(
                f"the {self.name} judge needs a model: pass model='openai:gpt-4o' (--model on "
                f"the CLI) or set {MODEL_ENV_VAR}; the code judge needs none"
            )
        self._backend_options = backend_options or {}
        self._backend: LLMBackend | None = (
            self._backend_spec if not isinstance(self._backend_spec, str) else None
        )
        self.max_attempts = max_attempts
        self.max_concurrency = max_concurrency
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.limits = limits or PromptLimits()
        self._semaphore: asyncio.Semaphore | None = None
        self._semaphore_loop: asyncio.AbstractEventLoop | None = None

    @property
    def backend(self) -> LLMBackend:
        """The model backend, built on first use from its spec."""
        if self._backend is None:
            assert isinstance(self._backend_spec, str)
            self._backend = get_backend(self._backend_spec, **self._backend_options)
        return self._backend

    def _limit(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._semaphore_loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._semaphore_loop = loop
        return self._semaphore

    def messages(self, request: JudgeRequest) -> list[Message]:
        """The conversation sent to the model (system rules + one user message)."""
        user = build_user_prompt(
            request.task,
            request.trajectory,
            verification=request.verification,
            diff=request.diff,
            include_state=self.include_state,
            limits=self.limits,
        )
        return [Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=user)]

    async def _chat(self, messages: list[Message]) -> ChatResponse:
        try:
            async with self._limit():
                return await self.backend.chat(
                    messages,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    response_format={"type": "json_object"},
                )
        except LLMError as exc:
            raise JudgeError(f"the {self.name} judge's model failed: {exc}") from exc

    async def judge(self, request: JudgeRequest) -> Verdict:
        try:
            (label, reasoning), attempts = await chat_until_valid(
                self._chat,
                self.messages(request),
                parse_judge_reply,
                max_attempts=self.max_attempts,
                answer_again="Answer again with only the JSON object "
                '{"label": ..., "reasoning": ...}.',
            )
        except UnusableAnswerError as exc:
            raise JudgeOutputError(
                f"the {self.name} judge's model gave {exc}", exc.attempts.last_reply
            ) from exc
        evidence: dict[str, Any] = {"attempts": attempts.count}
        if self.include_state:
            evidence["verification"] = _verification_summary(request.verification)
            if request.diff is not None:
                evidence["diff_counts"] = request.diff.counts().model_dump()
        if attempts.problems:
            evidence["malformed_replies"] = attempts.problems
        return Verdict(label=label, reasoning=reasoning, judge=self.name, evidence=evidence)


class CodeAugmentedJudge(LLMJudge):
    """The paper's code-augmented judge: the model also sees the state diff and verifier evidence."""

    name = "code+llm"
    include_state = True


# --------------------------------------------------------------------------- batches


async def judge_many(
    judge: Judge,
    requests: Sequence[JudgeRequest],
    *,
    return_exceptions: bool = False,
) -> list[Verdict | JudgeError]:
    """Judge a batch concurrently (bounded by the judge's own semaphore), results in order.

    With ``return_exceptions`` a failed item yields its :class:`JudgeError` in
    place, so one bad episode never discards a batch's other verdicts.
    """
    results = await asyncio.gather(
        *(judge.judge(r) for r in requests), return_exceptions=return_exceptions
    )
    out: list[Verdict | JudgeError] = []
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, JudgeError):
            raise r
        out.append(r)
    return out
