"""BFCLv3 in awm mode: each case's tools behind ``list_tools`` / ``call_tool``, run
through awm's episode loop (:func:`awm_verify.rollout_episode`) and judged by
bfcl-eval's checkers.

Single-turn cases have no executable tools (BFCL scores the calls, not their
results): a call is acknowledged and recorded. Multi-turn cases run BFCL's own
stateful classes (file system, trading bot, ...) through bfcl-eval's executor, one
instance set per session, so state carries from turn to turn as in BFCL. A
multi-turn case is one episode per user turn on the same session; the judge
collects every turn's calls and scores the case after the last one.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from awm_bench.bfcl.cases import BfclCase, oracle_task, render_turn
from awm_bench.bfcl.data import tool_schemas
from awm_bench.bfcl.scoring import CaseScore, score_case
from awm_bench.bfcl.upstream import bfcl, forget_instances
from awm_core.contracts import JudgeRequest
from awm_core.episode import CALL_TOOL, ActingPolicy, EpisodeSettings, StepChecks
from awm_core.models import Task, ToolResult, ToolSpec, Trajectory, Verdict, VerdictLabel
from awm_verify import rollout_episode

# BFCL decides what is right: awm's loop keeps its format (list_tools first, one
# call per turn) but lets wrong names and arguments through to BFCL's checker, and
# lets a model answer without calling anything (irrelevance, missing parameters).
BFCL_SETTINGS = EpisodeSettings(checks=StepChecks.external())

AWM_MODE_ADAPTATIONS: dict[str, str] = {
    "system_prompt": "awm's episode system prompt (its agent instructions and the Hermes "
    "format's description of list_tools and call_tool, the only functions offered); "
    "bfcl-eval's function-calling handler sends no system prompt of its own",
    "case_system_prompt": "a case's own system message (some live cases have one) is a "
    "'[system] ...' line at the top of the user's message, not a system message",
    "tools_behind_list_tools": "the case's functions, with the names, descriptions and "
    "parameter schemas bfcl-eval sends, are the result of list_tools instead of the "
    "request's tools (per turn: held-out functions appear from the turn that reveals them)",
    "held_out_descriptions": "from the turn that reveals a held-out function on, "
    "bfcl-eval's function-calling handler converts the docs it already converted again, "
    "so every function offered before that turn has its 'Note that the provided function "
    "is in Python 3 syntax.' twice; list_tools shows each description as first converted",
    "response_schema": "a multi-turn function's return-value schema ('response'), which "
    "bfcl-eval's OpenAI handler sends inside each function, is not listed",
    "one_call_per_reply": "one function call per reply: a turn's parallel calls take one "
    "reply each, and bfcl-eval's checker gets them in order; natively they come in one reply",
    "call_results": "single-turn calls are not executed: each is acknowledged with "
    '{"status": "accepted", "function": NAME} and the model is asked again until it '
    "replies without a call (natively bfcl-eval asks once and scores that reply); "
    "multi-turn calls run BFCL's own tool classes and return what they return natively",
    "turn_history": "each later user turn of a multi-turn case is a new episode whose "
    "user message summarises the earlier turns as 'User: ...' / 'Assistant: <final "
    "answer>' lines, without their calls and results; natively the whole conversation "
    "goes on in one history",
    "history_window": "within a turn the model sees the system prompt, the user's message, "
    "the list_tools exchange and the last 3 exchanges (awm_core.history.DEFAULT_WINDOW); "
    "natively every exchange",
}
"""Every difference between what the model is sent in awm mode and in native mode with
bfcl-eval's default OpenAI function-calling handler. ``tests_bfcl/test_bfcl_prompt.py``
captures both modes' requests for fixed cases and checks that they differ by these and
nothing else; docs/bench.md lists them by result column."""


class BfclSession:
    """One live BFCL case as an awm :class:`awm_core.session.EnvInstance` (no database)."""

    def __init__(self, case: BfclCase) -> None:
        self.case = case
        self.turn = 0
        self._names = case.name_map()
        # bfcl's executor keys instances by model name and case id: a unique name per
        # session keeps two sessions of one case apart
        self._owner = f"awmsession{uuid.uuid4().hex[:12]}"

    @property
    def env_id(self) -> str:
        return f"bfcl/{self.case.id}"

    async def list_tools(self) -> list[ToolSpec]:
        """The functions available in the current turn, under awm tool names."""
        reverse = {v: k for k, v in self._names.items()}
        docs = self.case.functions_at(self.turn)
        specs = []
        for tool in tool_schemas(self.case, docs):
            params = dict(tool.get("parameters", {}))
            params.setdefault("type", "object")
            specs.append(
                ToolSpec(
                    name=reverse[str(tool["name"])],
                    description=str(tool.get("description", "")),
                    input_schema=params,
                )
            )
        return specs

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run (multi-turn) or record (single-turn) one call; never raises."""
        original = self._names.get(name, name)
        if not self.case.multi_turn:
            if name not in self._names:
                return ToolResult(
                    content=f"No tool named {name!r}; call list_tools for the names.",
                    is_error=True,
                    error_type="unknown_tool",
                )
            return ToolResult(content={"status": "accepted", "function": original})
        to_call = bfcl.attr("bfcl_eval.model_handler.utils", "convert_to_function_call")
        execute = bfcl.attr(
            "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils",
            "execute_multi_turn_func_call",
        )
        category = self.case.category
        try:
            call = to_call([{original: arguments}])
            results, _ = execute(
                call,
                self.case.initial_config,
                self.case.involved_classes,
                self._owner,
                self.case.id,
                long_context="long_context" in category or "composite" in category,
                is_evaL_run=False,
            )
        except Exception as exc:  # bfcl evaluates call strings; a bad one must not end awm's loop
            return ToolResult(content=f"Error during execution: {exc}", is_error=True)
        text = str(results[0]) if results else ""
        return ToolResult(content=text, is_error=text.startswith("Error during execution"))

    async def snapshot(self) -> None:
        """None: BFCL state lives in its tool classes, not in a database."""
        return None

    def close(self) -> None:
        """Free the tool-class instances bfcl-eval cached for this session."""
        if self.case.multi_turn:
            forget_instances(self._owner, self.case.id)


def _inner(step_arguments: dict[str, Any]) -> tuple[str, Any]:
    name = str(step_arguments.get("tool_name", ""))
    args = step_arguments.get("arguments", {})
    if isinstance(args, str):
        # text that is not JSON stays text: bfcl's decoder fails on it, as on a model's
        with contextlib.suppress(ValueError):
            args = json.loads(args) if args.strip() else {}
    return name, args


def calls_of(trajectory: Trajectory, names: dict[str, str]) -> list[dict[str, str]]:
    """The trajectory's ``call_tool`` calls in bfcl's function-calling format,
    ``{BFCL name: arguments JSON}``, in order (``list_tools`` is awm's, not the model's answer)."""
    out = []
    for step in trajectory.steps:
        call = step.tool_call
        if call is None or call.name != CALL_TOOL:
            continue
        name, args = _inner(call.arguments)
        out.append({names.get(name, name): args if isinstance(args, str) else json.dumps(args)})
    return out


@dataclass
class BfclJudge:
    """Judges a case with bfcl-eval's checker; for multi-turn, after its last turn.

    Earlier turns get a provisional "Partially Completed" with the turn's calls as
    evidence; the case's verdict is the last turn's.
    """

    case: BfclCase
    name: str = "bfcl"
    turns: list[list[list[dict[str, str]]]] = field(default_factory=list)
    score: CaseScore | None = None
    output: Any = None  # what was scored, in bfcl's result-file format

    async def judge(self, request: JudgeRequest) -> Verdict:
        calls = calls_of(request.trajectory, self.case.name_map())
        if not self.case.multi_turn:
            self.output = calls if calls else (request.trajectory.final_answer or "")
            return self._verdict(score_case(self.case, self.output, mode="episode"), calls)
        # one bfcl "step" per call: awm's loop makes one call per model turn
        self.turns.append([[c] for c in calls])
        if len(self.turns) < len(self.case.turns):
            return Verdict(
                label=VerdictLabel.PARTIALLY_COMPLETED,
                reasoning=f"turn {len(self.turns)} of {len(self.case.turns)} recorded",
                judge=self.name,
                evidence={"calls": calls},
            )
        self.output = self.turns
        return self._verdict(score_case(self.case, self.turns, mode="episode"), calls)

    def _verdict(self, score: CaseScore, calls: list[dict[str, str]]) -> Verdict:
        self.score = score
        label = VerdictLabel.COMPLETED if score.valid else VerdictLabel.PARTIALLY_COMPLETED
        return Verdict(
            label=label,
            reasoning="bfcl-eval: valid" if score.valid else f"bfcl-eval: {score.error_type}",
            judge=self.name,
            evidence={"bfcl": score.to_json(), "calls": calls},
        )


@dataclass
class EpisodeRun:
    """One case run in awm mode: bfcl-eval's score and the episodes' trajectories."""

    score: CaseScore
    trajectories: list[Trajectory]
    output: Any


async def run_case(
    case: BfclCase,
    policy_for: Any,
    *,
    settings: EpisodeSettings = BFCL_SETTINGS,
    corruption: str | None = None,
) -> EpisodeRun:
    """Run ``case`` through awm's rollout function; ``policy_for(task)`` gives the policy
    of each turn's episode (:class:`awm_core.episode.ReferencePolicy` replays the oracle)."""
    session = BfclSession(case)
    judge = BfclJudge(case)
    trajectories: list[Trajectory] = []
    history: list[tuple[str, str]] = []
    try:
        for turn in range(len(case.turns)):
            session.turn = turn
            task = _turn_task(case, turn, history, corruption)
            policy: ActingPolicy = policy_for(task)
            done = await rollout_episode(
                session,
                task,
                policy,
                env_id=session.env_id,
                initial=None,
                judge=judge,
                settings=settings,
            )
            trajectories.append(done.trajectory)
            history.append((render_turn(case, turn), done.trajectory.final_answer or ""))
            if done.report is None:  # the judge itself failed: stop, the case is unscored
                break
    finally:
        session.close()
    score = judge.score or CaseScore(case.id, case.category, False, "awm:judge_failed", None)
    return EpisodeRun(score, trajectories, judge.output)


def _turn_task(
    case: BfclCase, turn: int, history: list[tuple[str, str]], corruption: str | None
) -> Task:
    task = oracle_task(case, turn, corruption=corruption)
    return task.model_copy(update={"instruction": render_turn(case, turn, history)})
