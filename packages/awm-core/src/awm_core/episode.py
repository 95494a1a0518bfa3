"""The episode loop: a policy acts in an environment through ``list_tools`` / ``call_tool``.

As in the paper, the model sees two meta-tools, makes at most one call per
turn, and a turn with no call is its final answer. Every turn passes the
step-level format checks of :class:`StepChecks`; the first violation ends the
episode (``Termination.FORMAT_ERROR``, a -1 reward in training) with the reason
on the step and the trajectory. Faults that are not the agent's are kept apart:
an environment failure ends with ``ENVIRONMENT_ERROR``, a backend that gave up
with ``MODEL_ERROR``.

A conversational task (``task.user`` set) gives the agent only the user's opening
message and a simulated user (:mod:`awm_core.user_sim`) to talk to: a turn with no
call goes to the user instead of ending the episode, and so does a call of the
third meta-tool ``send_message_to_user``. The user's replies are observations
(role ``user`` named :data:`~awm_core.conversation.SIMULATED_USER`, or the
meta-tool's result); the conversation ends when the user writes the stop token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from awm_core.conversation import SEND_MESSAGE_TO_USER, SIMULATED_USER, is_stop, strip_stop
from awm_core.errors import AWMError
from awm_core.history import DEFAULT_WINDOW, truncate_history
from awm_core.llm.base import ChatResponse, LLMBackend, LLMError
from awm_core.models import (
    Message,
    StepRecord,
    Task,
    Termination,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    Trajectory,
)
from awm_core.session import EnvSession

if TYPE_CHECKING:
    from awm_core.contracts import UserSimulator
from awm_core.toolcalls import (
    ParseFailure,
    ParseResult,
    ToolCallFormat,
    get_format,
    repair_json,
    validate_call,
)

LIST_TOOLS = "list_tools"
CALL_TOOL = "call_tool"

META_TOOLS: list[ToolSpec] = [
    ToolSpec(
        name=LIST_TOOLS,
        description="List the tools of this environment with their JSON input schemas. "
        "Call it once, first.",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    ),
    ToolSpec(
        name=CALL_TOOL,
        description="Call one environment tool by name with its arguments.",
        input_schema={
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "A name from list_tools."},
                "arguments": {
                    "type": ["object", "string"],
                    "description": "The tool's arguments as a JSON object "
                    "(a JSON-encoded string is accepted too).",
                },
            },
            "required": ["tool_name"],
            "additionalProperties": False,
        },
    ),
]

SEND_MESSAGE_TOOL = ToolSpec(
    name=SEND_MESSAGE_TO_USER,
    description="Send a message to the user you are helping and get their reply: ask for "
    "details you do not have, confirm before changing anything, tell them the outcome.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "What to tell the user."}},
        "required": ["message"],
        "additionalProperties": False,
    },
)

CONVERSATION_PROMPT = (
    "You are talking with a user. A reply without a tool call is sent to the user "
    "(so is a send_message_to_user call), and their answer comes back to you. Ask the "
    "user for any detail you do not have instead of guessing it, tell them what you "
    "found, and before you change anything on their behalf, say what you will do and "
    "wait for their yes. The user ends the conversation when they are done."
)


def meta_tools(task: Task) -> list[ToolSpec]:
    """The meta-tools an agent is offered for ``task``: two, plus ``send_message_to_user``
    when the task is conversational."""
    return [*META_TOOLS, SEND_MESSAGE_TOOL] if task.user is not None else list(META_TOOLS)


DEFAULT_SYSTEM_PROMPT = (
    "You are an agent that completes the user's task by operating an application "
    "through its tools. First call list_tools to learn the application's tools, then "
    "use call_tool to run them, one call per reply. Think step by step. When the task "
    "is done, reply without a tool call, giving the final answer the user asked for."
)


class Violation(StrEnum):
    """Step-level format checks; the parser's reasons plus the episode-level rules."""

    MALFORMED_JSON = ParseFailure.MALFORMED_JSON.value
    MULTIPLE_CALLS = ParseFailure.MULTIPLE_CALLS.value
    UNKNOWN_TOOL = ParseFailure.UNKNOWN_TOOL.value
    INVALID_ARGUMENTS = ParseFailure.INVALID_ARGUMENTS.value
    EMPTY_REASONING = ParseFailure.EMPTY_REASONING.value
    LIST_TOOLS_NOT_FIRST = "list_tools_not_first"
    LIST_TOOLS_REPEATED = "list_tools_repeated"
    NO_SUCCESSFUL_CALL = "no_successful_call"  # a final answer before any tool worked
    TOOL_ERROR_RESPONSE = "tool_error_response"  # a call the environment answered with an error


@dataclass(frozen=True)
class StepChecks:
    """Which step-level checks end an episode early (the paper's, each switchable).

    ``require_reasoning`` is off by default because many models (SmolLM2, most
    API models) do not emit ``<think>``; turn it on for thinking models and RL.
    ``fail_on_tool_error`` is off by default so an agent can recover from a
    ``not_found``; the paper's training recipe turns it on.
    """

    require_reasoning: bool = False
    list_tools_first_and_once: bool = True
    known_tools: bool = True
    valid_arguments: bool = True
    success_before_answer: bool = True
    fail_on_tool_error: bool = False

    @classmethod
    def paper(cls) -> StepChecks:
        """Every check on, as in the paper's RL recipe."""
        return cls(require_reasoning=True, fail_on_tool_error=True)

    @classmethod
    def external(cls) -> StepChecks:
        """An external benchmark's rules decide (BFCL, τ², MCP-Universe): wrong names and
        arguments reach its environment, and an agent may answer without a successful call."""
        return cls(known_tools=False, valid_arguments=False, success_before_answer=False)


@dataclass(frozen=True)
class EpisodeSettings:
    """How an episode runs; one object for ``awm run``, rollouts, gym episodes, training, evaluation.

    ``max_steps``: assistant turns before the episode ends as ``MAX_STEPS``.
    ``history_window``: the ``w`` of :func:`awm_core.history.truncate_history`
    (``None`` keeps the whole history). ``fmt``: the tool-call format
    (:func:`awm_core.toolcalls.get_format`). ``checks``: the step-level checks.
    ``system_prompt``: what the model is told before the meta-tools are described.
    ``lenient``: repair near-miss tool calls instead of ending the episode (evaluation).
    A caller that needs other defaults (training's paper checks, a benchmark's budget)
    names its own instance once and derives from it with :func:`dataclasses.replace`.
    """

    max_steps: int = 20
    history_window: int | None = DEFAULT_WINDOW
    fmt: str | ToolCallFormat = "hermes"
    checks: StepChecks = StepChecks()
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    lenient: bool = False


class ActingPolicy(Protocol):
    """Anything that produces the next assistant turn: a :class:`Policy`, a replay..."""

    @property
    def name(self) -> str:
        """Recorded in ``trajectory.metadata["policy"]``."""
        ...

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """The next assistant turn for the (already truncated) ``messages``."""
        ...


@dataclass
class Policy:
    """An LLM backend plus its sampling settings."""

    backend: LLMBackend
    temperature: float | None = None
    max_tokens: int | None = None

    @property
    def name(self) -> str:
        """The backend's spec (``openai:gpt-4o``)."""
        return self.backend.name

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """Ask the backend; its :class:`LLMError` propagates (the loop records MODEL_ERROR)."""
        return await self.backend.chat(
            messages, tools=tools, temperature=self.temperature, max_tokens=self.max_tokens
        )


@dataclass
class ReferencePolicy:
    """Replays ``task.reference_solution`` through the same loop, in the episode's format.

    Turn 1 calls ``list_tools``, then one ``call_tool`` per reference step, then
    ``task.reference_answer`` as the final answer. Each turn carries a short
    reasoning so it passes ``require_reasoning``. This is how a task is proven
    solvable: the replay goes through the parser and every check an agent meets.
    """

    task: Task
    name: str = "reference"
    _turn: int = field(default=0, init=False)

    def _conversation_turn(self, turn: int, fmt: ToolCallFormat) -> ChatResponse:
        """Turn ``turn`` (>= 1) of a conversational task's reference: the plan of its tool
        calls and ``user.reference_messages``, then a closing question until the user stops."""
        from awm_core.conversation import conversation_plan
        from awm_core.models import AgentMessage

        assert self.task.user is not None
        plan = conversation_plan(
            self.task.reference_solution or [], self.task.user.reference_messages
        )
        if turn > len(plan):
            return fmt.assistant_response(
                None, reasoning="Nothing is left to do.", content="Is there anything else?"
            )
        item = plan[turn - 1]
        if isinstance(item, AgentMessage):
            return fmt.assistant_response(None, reasoning="Tell the user.", content=item.text)
        call = ToolCall(
            id=f"call_{turn}",
            name=CALL_TOOL,
            arguments={"tool_name": item.tool, "arguments": item.arguments},
        )
        return fmt.assistant_response(call, reasoning=f"Reference step: {item.tool}.")

    async def respond(
        self,
        messages: list[Message],
        *,
        fmt: ToolCallFormat,
        tools: list[dict[str, Any]] | None,
    ) -> ChatResponse:
        """The next scripted turn."""
        steps = self.task.reference_solution or []
        turn = self._turn
        self._turn += 1
        if turn == 0:
            call = ToolCall(id="call_0", name=LIST_TOOLS, arguments={})
            return fmt.assistant_response(call, reasoning="First, list the tools.")
        if self.task.user is not None:
            return self._conversation_turn(turn, fmt)
        if turn <= len(steps):
            step = steps[turn - 1]
            call = ToolCall(
                id=f"call_{turn}",
                name=CALL_TOOL,
                arguments={"tool_name": step.tool, "arguments": step.arguments},
            )
            return fmt.assistant_response(call, reasoning=f"Reference step {turn}: {step.tool}.")
        answer = self.task.reference_answer or "Done."
        return fmt.assistant_response(None, reasoning="The task is complete.", content=answer)


def render_result(result: ToolResult) -> str:
    """A tool result as the text the model reads."""
    body = result.content if isinstance(result.content, str) else _dumps(result.content)
    if result.is_error:
        return f"Error ({result.error_type or 'error'}): {body}"
    return body


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_listing(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


@dataclass
class _State:
    """What the checks need to remember across turns."""

    listed: bool = False
    successes: int = 0
    env_tools: dict[str, Mapping[str, Any]] = field(default_factory=dict)


class _Ended(Exception):
    """Raised inside a step to end the episode; ``violation`` marks a format violation."""

    def __init__(
        self, termination: Termination, reason: str, violation: Violation | None = None
    ) -> None:
        super().__init__(reason)
        self.termination = termination
        self.reason = reason
        self.violation = violation


def _violation(kind: Violation, detail: str) -> _Ended:
    return _Ended(Termination.FORMAT_ERROR, f"{kind.value}: {detail}", kind)


def _new_trajectory(
    policy_name: str,
    session: EnvSession,
    task: Task,
    system: str,
    form: ToolCallFormat,
    env_id: str,
    metadata: dict[str, Any],
) -> Trajectory:
    return Trajectory(
        env_id=env_id or str(getattr(session, "env_id", "")),
        task_id=task.id,
        instruction=task.instruction,
        messages=[
            Message(role="system", content=system),
            Message(role="user", content=task.user.opening if task.user else task.instruction),
        ],
        started_at=datetime.now(UTC),
        metadata={"policy": policy_name, "format": form.name, **metadata},
    )


async def _env_tools(session: EnvSession) -> list[ToolSpec]:
    """The environment's tools; a raise ends the episode as the environment's fault."""
    try:
        return await session.list_tools()
    except Exception as exc:  # the protocol says never raise; a broken env still might
        raise _Ended(Termination.ENVIRONMENT_ERROR, f"list_tools raised {exc!r}") from None


async def _list_tools(session: EnvSession, state: _State, checks: StepChecks) -> ToolResult:
    if state.listed and checks.list_tools_first_and_once:
        raise _violation(Violation.LIST_TOOLS_REPEATED, "list_tools was already called")
    started = time.perf_counter()
    env_tools = await _env_tools(session)
    state.listed = True
    state.env_tools = {t.name: t.input_schema for t in env_tools}
    return ToolResult(content=_tool_listing(env_tools), latency_s=time.perf_counter() - started)


async def _call_tool(
    call: ToolCall, session: EnvSession, state: _State, checks: StepChecks, lenient: bool
) -> ToolResult:
    if not state.listed and checks.list_tools_first_and_once:
        raise _violation(Violation.LIST_TOOLS_NOT_FIRST, "call list_tools before call_tool")
    target, bad_json = _inner_call(call, lenient=lenient)
    if bad_json:
        raise _violation(Violation.MALFORMED_JSON, bad_json)
    if not state.listed and not state.env_tools and (checks.known_tools or checks.valid_arguments):
        # The agent skipped list_tools (allowed with list_tools_first_and_once off: its prompt
        # described the tools); the checks still hold its calls to the environment's real tools.
        state.env_tools = {t.name: t.input_schema for t in await _env_tools(session)}
    problem = validate_call(target, state.env_tools) if state.env_tools else None
    if problem is not None and _checked(problem[0], checks):
        raise _violation(Violation(problem[0].value), problem[1])
    started = time.perf_counter()
    try:
        result = await session.call_tool(target.name, target.arguments)
    except Exception as exc:
        raise _Ended(Termination.ENVIRONMENT_ERROR, f"{target.name} raised {exc!r}") from None
    if not result.latency_s:
        result = result.model_copy(update={"latency_s": time.perf_counter() - started})
    return result


def _check_parsed(
    parsed: ParseResult, checks: StepChecks, state: _State, *, conversational: bool = False
) -> ToolCall | None:
    """The call to run, or None for a final answer (a message to the user in a conversation);
    raises :class:`_Ended` on a violation."""
    if parsed.failure is ParseFailure.NO_CALL:
        if checks.success_before_answer and state.successes == 0 and not conversational:
            raise _violation(
                Violation.NO_SUCCESSFUL_CALL,
                "answered before list_tools and one successful call_tool",
            )
        return None
    if parsed.failure is not None and not (
        parsed.failure is ParseFailure.INVALID_ARGUMENTS and not checks.valid_arguments
    ):
        # An unknown meta-tool cannot be run at all, so it always ends the episode.
        raise _violation(Violation(parsed.failure.value), parsed.detail)
    if parsed.call is None:  # pragma: no cover - a failure without a call always raises above
        raise _violation(Violation.MALFORMED_JSON, parsed.detail)
    return parsed.call


class EpisodeRun:
    """The episode loop as a state machine: the caller brings each assistant turn.

    :func:`run_episode` drives it with a policy; a trainer or a gym-style wrapper
    (:mod:`awm_verify.gym`) drives it with text it got elsewhere. Either way every
    turn goes through the same parser, step checks, tool dispatch and history
    window, so there is one loop. ``prompt()`` is what the model should see next;
    ``step(response)`` records the turn, runs its call and ends the trajectory
    when the turn ends it.
    """

    def __init__(
        self,
        session: EnvSession,
        task: Task,
        *,
        settings: EpisodeSettings = EpisodeSettings(),
        policy_name: str = "external",
        env_id: str = "",
        user: UserSimulator | None = None,
    ) -> None:
        self.session = session
        self.task = task
        self.settings = settings
        self.format = get_format(settings.fmt)
        self.user = _user_for(task, user)
        self.meta_tools = meta_tools(task)
        self._meta_schemas = {t.name: t.input_schema for t in self.meta_tools}
        self.request_tools = self.format.request_tools(self.meta_tools)
        base = settings.system_prompt
        if self.user is not None:
            base = f"{base}\n\n{CONVERSATION_PROMPT}"
        system = self.format.system_prompt(base, self.meta_tools)
        self._said: list[str] = []  # the agent's messages to the user
        self._dialogue: list[Message] = [self.trajectory_opening(task)]
        self.trajectory = _new_trajectory(
            policy_name,
            session,
            task,
            system,
            self.format,
            env_id,
            {
                "history_window": settings.history_window,
                "max_steps": settings.max_steps,
                "lenient": settings.lenient,
                **({"user_simulator": self.user.name} if self.user is not None else {}),
            },
        )
        self._state = _State()
        self._done = False
        if settings.max_steps <= 0:
            self.end(Termination.MAX_STEPS, f"no final answer within {settings.max_steps} steps")

    @property
    def done(self) -> bool:
        return self._done

    @staticmethod
    def trajectory_opening(task: Task) -> Message:
        """The user's first message: the opening of a conversation, else the instruction."""
        return Message(role="user", content=task.user.opening if task.user else task.instruction)

    async def _ask_user(self, text: str) -> tuple[str, bool]:
        """Send ``text`` to the simulated user: ``(their reply, whether they ended it)``."""
        assert self.user is not None
        self._said.append(text)
        self._dialogue.append(Message(role="assistant", content=text))
        try:
            raw = await self.user.reply(list(self._dialogue))
        except (AWMError, LLMError) as exc:  # the simulator's fault, not the agent's
            raise _Ended(
                Termination.MODEL_ERROR, f"user simulator: {type(exc).__name__}: {exc}"
            ) from None
        reply = strip_stop(raw)
        self._dialogue.append(Message(role="user", content=reply))
        return reply, is_stop(raw)

    def _user_ended(self) -> None:
        self.trajectory.final_answer = "\n".join(self._said)
        self.end(Termination.FINAL_ANSWER, "the user ended the conversation")

    def prompt(self) -> list[Message]:
        """The messages for the next turn: the history, truncated to the window."""
        return truncate_history(self.trajectory.messages, self.settings.history_window)

    def end(self, termination: Termination, reason: str | None) -> Trajectory:
        """End the trajectory (a model error, a caller's timeout...); later calls are no-ops."""
        traj = self.trajectory
        if not self._done:
            self._done = True
            traj.termination = termination
            traj.termination_reason = reason
            traj.finished_at = datetime.now(UTC)
            traj.usage = sum((s.usage for s in traj.steps), TokenUsage())
        return traj

    async def step(self, response: ChatResponse, *, latency_s: float = 0.0) -> StepRecord:
        """Record one assistant turn and act on it; raises ``RuntimeError`` once done."""
        if self.done:
            raise RuntimeError(f"the episode has ended ({self.trajectory.termination})")
        traj, form, state = self.trajectory, self.format, self._state
        checks, lenient = self.settings.checks, self.settings.lenient
        index = len(traj.steps)
        parsed = form.parse(
            response,
            self._meta_schemas,
            require_reasoning=checks.require_reasoning,
            lenient=lenient,
        )
        if lenient and parsed.failure is ParseFailure.UNKNOWN_TOOL and parsed.call is not None:
            parsed = _wrap_direct_call(parsed, state)
        call = parsed.call
        assistant = form.assistant_message(response, parsed)
        if call is not None and call.id is None:
            call = call.model_copy(update={"id": f"call_{index}"})
            parsed = replace(parsed, call=call)
            if assistant.tool_calls:
                assistant = assistant.model_copy(update={"tool_calls": [call]})
        step = StepRecord(
            index=index,
            assistant=assistant,
            tool_call=call,
            model_latency_s=response.latency_s or latency_s,
            usage=response.usage,
        )
        traj.steps.append(step)
        traj.messages.append(assistant)
        try:
            call = _check_parsed(parsed, checks, state, conversational=self.user is not None)
            if call is None and self.user is not None:
                reply, stop = await self._ask_user(parsed.content)
                step.result = ToolResult(content=reply)
                if reply:
                    traj.messages.append(Message(role="user", name=SIMULATED_USER, content=reply))
                if stop:
                    self._user_ended()
                    return step
            elif call is None:
                traj.final_answer = parsed.content
                self.end(Termination.FINAL_ANSWER, None)
                return step
            elif call.name == SEND_MESSAGE_TO_USER:
                reply, stop = await self._ask_user(str(call.arguments.get("message", "")))
                step.result = ToolResult(content=reply)
                traj.messages.append(form.tool_message(call, reply))
                if stop:
                    self._user_ended()
                    return step
            elif call.name == LIST_TOOLS:
                step.result = await _list_tools(self.session, state, checks)
            else:
                step.result = await _call_tool(call, self.session, state, checks, lenient)
            result = step.result
            if call is not None and call.name in (LIST_TOOLS, CALL_TOOL) and result is not None:
                traj.messages.append(form.tool_message(call, render_result(result)))
                if result.error_type == "environment_error":
                    raise _Ended(Termination.ENVIRONMENT_ERROR, render_result(result)[:300])
                if result.is_error and checks.fail_on_tool_error:
                    raise _violation(Violation.TOOL_ERROR_RESPONSE, render_result(result)[:300])
                if not result.is_error and call.name == CALL_TOOL:
                    state.successes += 1
        except _Ended as ended:
            if ended.violation is not None:
                step.violation = ended.violation.value
            self.end(ended.termination, f"step {index}: {ended.reason}")
            return step
        if len(traj.steps) >= self.settings.max_steps:
            if self._said:
                traj.final_answer = "\n".join(self._said)
            self.end(
                Termination.MAX_STEPS, f"no final answer within {self.settings.max_steps} steps"
            )
        return step


async def run_episode(
    policy: ActingPolicy,
    session: EnvSession,
    task: Task,
    *,
    settings: EpisodeSettings = EpisodeSettings(),
    env_id: str = "",
    on_step: Callable[[Trajectory], None] | None = None,
    user: UserSimulator | None = None,
) -> Trajectory:
    """Run one episode and return its :class:`Trajectory` (it never raises for agent faults).

    ``settings`` (:class:`EpisodeSettings`): step budget, history window, tool-call
    format, step checks, system prompt and leniency. ``on_step`` sees the trajectory
    after every step (the same object, growing), so a caller can keep it as it goes.
    ``user`` plays a conversational task's user (default: the ``scripted`` simulator).
    """
    run = EpisodeRun(
        session, task, settings=settings, policy_name=policy.name, env_id=env_id, user=user
    )
    if on_step is not None:
        on_step(run.trajectory)
    while not run.done:
        started = time.perf_counter()
        try:
            response = await policy.respond(run.prompt(), fmt=run.format, tools=run.request_tools)
        except LLMError as exc:
            index = len(run.trajectory.steps)
            return run.end(Termination.MODEL_ERROR, f"step {index}: {type(exc).__name__}: {exc}")
        await run.step(response, latency_s=time.perf_counter() - started)
        if on_step is not None:
            on_step(run.trajectory)
    return run.trajectory


def _user_for(task: Task, user: UserSimulator | None) -> UserSimulator | None:
    """The simulator for a conversational task (the ``scripted`` one unless given), else None."""
    if task.user is None:
        return None
    if user is not None:
        return user
    from awm_core.registry import get_user_simulator

    return get_user_simulator("scripted", task)


def _checked(failure: ParseFailure, checks: StepChecks) -> bool:
    if failure is ParseFailure.UNKNOWN_TOOL:
        return checks.known_tools
    if failure is ParseFailure.INVALID_ARGUMENTS:
        return checks.valid_arguments
    return True


def _inner_call(call: ToolCall, *, lenient: bool) -> tuple[ToolCall, str]:
    """``call_tool(tool_name, arguments)`` as the environment call it stands for.

    Returns ``(call, problem)``; ``problem`` is non-empty when ``arguments`` is a
    string that does not decode to a JSON object.
    """
    args: Any = call.arguments.get("arguments", {})
    if isinstance(args, str):
        # The upstream interface sends arguments as a JSON string; accept it as declared.
        try:
            args = (repair_json(args)[0] if lenient else json.loads(args)) if args.strip() else {}
        except ValueError as exc:
            return call, f"call_tool arguments are not JSON: {exc}"
    if not isinstance(args, dict):
        return call, f"call_tool arguments must be a JSON object, got {type(args).__name__}"
    name = str(call.arguments.get("tool_name", ""))
    return ToolCall(id=call.id, name=name, arguments=args), ""


def _wrap_direct_call(parsed: ParseResult, state: _State) -> ParseResult:
    """Lenient mode: a direct call of an environment tool becomes ``call_tool`` of it."""
    call = parsed.call
    if call is None or call.name not in state.env_tools:
        return parsed
    wrapped = ToolCall(
        id=call.id, name=CALL_TOOL, arguments={"tool_name": call.name, "arguments": call.arguments}
    )
    return replace(
        parsed, call=wrapped, failure=None, detail="", repairs=(*parsed.repairs, "direct_call")
    )
