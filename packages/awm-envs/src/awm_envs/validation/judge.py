"""Decide evidence-only verdicts (the AWM-1K release's sql-mode verifiers) with a judge model.

An sql-mode verifier of the release (``verify_task(initial_db_path, final_db_path)``)
only queries the two databases: its result carries ``evidence["undecided"]`` and no
usable verdict. The release leaves the decision to the code-augmented LLM judge,
which reads that evidence together with the task's success and failure criteria, the
agent's tool calls, its final answer and the database diff. Validation and
``awm envs prove`` do the same when they are given a judge model
(``--judge-model SPEC``): every trajectory whose verifier could not decide is sent
to the ``code+llm`` judge (registered by awm-verify through the ``register_judges``
hook), and only the label **Completed** counts as *complete*. Without a judge model
such a trajectory stays *undecided*: no verdict is invented either way.

The judge's own event loop runs on a thread of its own, so the same judge (and its
HTTP client) serves synchronous validation, worker threads and asyncio code alike,
and a task's checks are judged concurrently: validation submits each one as its
replay is verified (:meth:`EvidenceJudge.submit`) and collects the labels at the end
of the task, so a task costs about one model round trip, not one per check.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from awm_core.contracts import DEFAULT_JUDGE, Judge, JudgeRequest
from awm_core.dbdiff import diff_images
from awm_core.errors import AWMError, UnknownNameError
from awm_core.models import (
    Message,
    StepRecord,
    Task,
    ToolCall,
    ToolCallStep,
    ToolResult,
    Trajectory,
    VerdictLabel,
    VerifierResult,
)
from awm_envs.errors import JudgeFailedError, JudgeUnavailableError

T = TypeVar("T")

UNDECIDED_HINT = (
    "its verifier only gathers evidence (an AWM-1K sql-mode verifier) and cannot decide "
    "alone; decide it with the code-augmented judge: --judge-model SPEC (e.g. openai:gpt-4o)"
)
"""What a report says about a task whose verdicts no judge decided."""


def is_undecided(result: VerifierResult) -> bool:
    """Whether ``result`` is evidence without a verdict (``evidence["undecided"]`` is true)."""
    return result.error is None and result.evidence.get("undecided") is True


class JudgeDecision(BaseModel):
    """A judge model's decision about one trajectory, kept in the validation and prove reports."""

    judge: str
    model: str
    label: str
    reasoning: str

    @property
    def complete(self) -> bool:
        """Only **Completed** is complete; Partially Completed is not."""
        return self.label == VerdictLabel.COMPLETED.value


def replay_trajectory(
    env_id: str,
    task: Task,
    steps: Sequence[ToolCallStep],
    results: Sequence[tuple[bool, str | None, Any]],
    final_answer: str | None,
) -> Trajectory:
    """A replayed list of tool calls as the trajectory a judge reads.

    Each call is recorded as the agent would have made it (``call_tool`` with the
    tool's name and arguments) with the result the replay got, so the judge sees
    the same shape as for a real episode.
    """
    records = []
    for i, (step, (is_error, error_type, content)) in enumerate(zip(steps, results, strict=False)):
        call = ToolCall(
            id=f"replay-{i}",
            name="call_tool",
            arguments={"tool_name": step.tool, "arguments": dict(step.arguments)},
        )
        records.append(
            StepRecord(
                index=i,
                assistant=Message(role="assistant", tool_calls=[call]),
                tool_call=call,
                result=ToolResult(content=content, is_error=is_error, error_type=error_type),
            )
        )
    return Trajectory(
        env_id=env_id,
        task_id=task.id,
        instruction=task.instruction,
        steps=records,
        final_answer=final_answer,
    )


class EvidenceJudge:
    """The code-augmented judge, deciding trajectories whose verifier gave evidence only.

    ``model`` is an awm backend spec (``openai:gpt-4o``; see ``awm llm``); the backend
    is built here, so a missing API key fails now, not after an hour of replays.
    ``judge`` is the registered judge to use (``code+llm``: it sees the evidence).
    Close it (or use it as a context manager) to stop its event loop.
    """

    def __init__(self, model: str, *, judge: str = DEFAULT_JUDGE, **backend_options: Any) -> None:
        from awm_core import get_backend, get_judge

        self.model = model
        self.judge_name = judge
        try:
            backend = get_backend(model, **backend_options)
            self._judge: Judge = get_judge(judge, model=backend)
        except UnknownNameError as exc:
            raise JudgeUnavailableError(judge, model, str(exc)) from exc
        except AWMError as exc:  # a backend that cannot be configured (no key, no endpoint)
            raise JudgeUnavailableError(judge, model, str(exc)) from exc
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="awm-evidence-judge", daemon=True
        )
        self._thread.start()

    def __enter__(self) -> EvidenceJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the judge's event loop (idempotent)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def _decide(
        self, task: Task, trajectory: Trajectory, verification: VerifierResult, diff: Any
    ) -> JudgeDecision:
        # the verifier's "complete: False" is a placeholder: the judge must read "no verdict"
        evidence_only = verification.model_copy(update={"complete": None})
        request = JudgeRequest(task, trajectory, evidence_only, diff)
        try:
            verdict = await self._judge.judge(request)
        except AWMError as exc:  # the model failed, or never answered in the judge's format
            raise JudgeFailedError(self.model, str(exc)) from exc
        return JudgeDecision(
            judge=verdict.judge or self.judge_name,
            model=self.model,
            label=verdict.label.value,
            reasoning=verdict.reasoning,
        )

    async def adecide(
        self,
        task: Task,
        trajectory: Trajectory,
        initial: bytes,
        final: bytes,
        verification: VerifierResult,
    ) -> JudgeDecision:
        """Judge one trajectory from asyncio code (the call runs on the judge's own loop).

        Raises :class:`~awm_envs.errors.JudgeFailedError` when the model gives no usable label.
        """
        diff = await asyncio.to_thread(diff_images, initial, final)
        return await self._submit(self._decide(task, trajectory, verification, diff))

    def submit(
        self,
        task: Task,
        trajectory: Trajectory,
        initial: bytes,
        final: bytes,
        verification: VerifierResult,
    ) -> concurrent.futures.Future[JudgeDecision]:
        """Start judging one trajectory and return at once (synchronous code, worker threads).

        The future's ``result()`` is the decision, or raises
        :class:`~awm_envs.errors.JudgeFailedError`. Many may be in flight together; the
        judge bounds its own concurrency.
        """
        diff = diff_images(initial, final)
        return asyncio.run_coroutine_threadsafe(
            self._decide(task, trajectory, verification, diff), self._loop
        )

    def decide(
        self,
        task: Task,
        trajectory: Trajectory,
        initial: bytes,
        final: bytes,
        verification: VerifierResult,
    ) -> JudgeDecision:
        """:meth:`submit` and wait (not from the judge's own loop)."""
        return self.submit(task, trajectory, initial, final, verification).result()
