"""τ²-bench in awm mode: the agent is an awm policy in awm's episode loop, everything
else is τ²'s own (orchestrator, environment, user simulator, evaluator).

τ²'s :class:`Orchestrator` runs in a thread with a bridge agent in the agent's seat.
The awm episode (:func:`awm_verify.rollout_episode`) sees the domain's tools plus
``send_message_to_user`` behind ``list_tools`` / ``call_tool``: each ``call_tool``
becomes the bridge agent's next message (a tool call, or text to the user), and the
orchestrator's answer (the tool's result, the user's reply) comes back as the call's
result. The episode's final answer is the agent's last message. The judge waits for
the conversation to end and scores the simulation with τ²'s ``evaluate_simulation``.

The model's system prompt is τ²'s own agent prompt (``LLMAgent.system_prompt``: its
instructions and the domain policy), followed by :data:`AWM_MODE_NOTE` and the
episode format's description of ``list_tools`` / ``call_tool``;
:data:`AWM_MODE_ADAPTATIONS` lists every way what the model sees differs from τ²'s
native run (``tests_tau2/test_tau2_prompt.py`` checks each against τ²'s own requests).
A conversation the user ends before the agent's first turn is scored by τ² as it
stands, with no episode.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from awm_bench.tau2.cases import MESSAGE_TOOL, STOP
from awm_bench.tau2.upstream import (
    attr,
    default_max_errors,
    default_max_steps,
    default_seed,
    module,
)
from awm_core.contracts import JudgeRequest
from awm_core.episode import ActingPolicy, EpisodeSettings, StepChecks
from awm_core.errors import AWMError
from awm_core.models import (
    Complexity,
    Task,
    ToolResult,
    ToolSpec,
    Trajectory,
    Verdict,
    VerdictLabel,
)
from awm_verify import rollout_episode

# τ² decides: wrong names and arguments reach τ²'s environment (which answers with an
# error), and an agent may answer without a successful call.
# (max_steps is set per conversation: τ²'s step limit plus the list_tools turn)
TAU2_SETTINGS = EpisodeSettings(checks=StepChecks.external())

ENDED = "The conversation with the user has ended. Reply with your final message."
_END = object()
REPLY_TIMEOUT_S = 600.0

AWM_MODE_NOTE = (
    "<awm_mode>\n"
    "You reach the tools through two functions: list_tools lists them with their JSON "
    "schemas, call_tool runs one by name with its arguments. To send a message to the "
    f"user, use call_tool with the tool {MESSAGE_TOOL}; its result is the user's reply. "
    "A reply without a function call is your last message to the user and ends the "
    "conversation.\n"
    "</awm_mode>"
)
"""What awm mode adds after τ²'s agent prompt: how its tools and the user are reached."""

AWM_MODE_ADAPTATIONS: dict[str, str] = {
    "system_prompt": "τ²'s agent system prompt (instructions and policy) verbatim, then "
    "AWM_MODE_NOTE and the episode format's list_tools/call_tool description",
    "greeting": "τ²'s opening greeting (the agent's first message, sent by τ²'s "
    "orchestrator) is not in the model's history: it starts at the user's first message",
    "tools_behind_list_tools": "the domain's tools, with τ²'s names, descriptions and "
    "parameter schemas unchanged, are the result of list_tools instead of the request's "
    "tools",
    "send_message_to_user": "one extra tool, send_message_to_user: the agent's messages to "
    "the user are calls of it and the user's replies its results",
    "final_answer": "a reply without a call is sent to the user as the agent's last message; "
    "τ²'s agent would keep the conversation open",
    "sampling": "the request carries the awm policy's sampling settings; τ²'s agent also "
    "sends tool_choice=auto, and its seed where the awm policy sets none",
}
"""Every difference between the model's requests in awm mode and in τ²'s native run."""


class Tau2SimulationError(AWMError):
    """τ²'s conversation failed before the user's first message (e.g. the user model)."""


MESSAGE_SPEC = ToolSpec(
    name=MESSAGE_TOOL,
    description="Send a message to the user you are helping; the result is the user's reply.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string", "description": "What to tell the user."}},
        "required": ["message"],
    },
)


@cache
def _bridge_agent_class() -> type:
    """A τ² LocalAgent whose every turn is handed over by :class:`Tau2Bridge`."""
    local_agent = attr("tau2.agent.base", "LocalAgent")

    class BridgeAgent(local_agent):  # type: ignore[misc,valid-type]
        """Sits in τ²'s agent seat; the awm episode decides each message."""

        def __init__(self, tools: Any, domain_policy: str, bridge: Tau2Bridge) -> None:
            super().__init__(tools=tools, domain_policy=domain_policy)
            self.bridge = bridge

        def get_init_state(self, message_history: Any = None) -> list[Any]:
            return list(message_history or [])

        def generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
            return self.bridge.agent_turn(message), state

        @classmethod
        def is_stop(cls, message: Any) -> bool:
            return bool(message.content) and STOP in message.content

        def set_seed(self, seed: int) -> None:
            """The awm policy's sampling is set by awm."""

    return BridgeAgent


@dataclass
class Tau2Bridge:
    """One τ² conversation with its orchestrator thread and the two hand-over queues."""

    domain: str
    task: Any
    user_llm: str
    user_llm_args: dict[str, Any]
    max_steps: int | None = None  # τ²'s own default when None
    simulation: Any = None
    error: BaseException | None = None
    _actions: queue.Queue[Any] = field(default_factory=queue.Queue)
    _replies: queue.Queue[Any] = field(default_factory=queue.Queue)
    _finished: bool = False
    _ended: bool = False  # the episode has seen the conversation end
    _calls: int = 0

    def __post_init__(self) -> None:
        registry = attr("tau2.registry", "registry")
        self.environment = registry.get_env_constructor(self.domain)()
        self.tools = self.environment.get_tools()
        try:
            user_tools = self.environment.get_user_tools()
        except Exception:  # domains without user tools raise
            user_tools = None
        user = attr("tau2.user.user_simulator", "UserSimulator")(
            tools=user_tools,
            instructions=str(self.task.user_scenario),
            llm=self.user_llm,
            llm_args=self.user_llm_args,
        )
        self.policy = self.environment.get_policy()
        agent = _bridge_agent_class()(self.tools, self.policy, self)
        self.orchestrator = attr("tau2.orchestrator.orchestrator", "Orchestrator")(
            domain=self.domain,
            agent=agent,
            user=user,
            environment=self.environment,
            task=self.task,
            max_steps=self.max_steps or default_max_steps(),
            max_errors=default_max_errors(),
            seed=default_seed(),
        )
        self.thread = threading.Thread(target=self._run, name=f"tau2-{self.task.id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.simulation = self.orchestrator.run()
        except BaseException as exc:  # reported by the judge as an environment error
            self.error = exc
        finally:
            self._replies.put(_END)

    # ------------------------------------------------------------------ orchestrator side
    def agent_turn(self, message: Any) -> Any:
        """The orchestrator asks the agent: hand ``message`` to the episode, wait for its move."""
        assistant = attr("tau2.data_model.message", "AssistantMessage")
        if self._finished:
            return assistant(role="assistant", content=STOP)
        self._replies.put(message)
        return self._actions.get()

    # ------------------------------------------------------------------ episode side
    def _next_reply(self) -> Any:
        """The orchestrator's next message for the agent, or ``_END`` once it has stopped.

        Polls, so an orchestrator that ended (or died) between a check and a wait can
        never leave the episode waiting for a reply that will not come.
        """
        deadline = REPLY_TIMEOUT_S
        while deadline > 0:
            try:
                return self._replies.get(timeout=0.5)
            except queue.Empty:
                if not self.thread.is_alive() and self._replies.empty():
                    return _END
                deadline -= 0.5
        return _END

    def system_prompt(self) -> str:
        """τ²'s own agent prompt for this domain (built by τ²'s ``LLMAgent``), then
        :data:`AWM_MODE_NOTE`; the episode format appends the meta-tools."""
        llm_agent = attr("tau2.agent.llm_agent", "LLMAgent")
        prompt = str(llm_agent(tools=self.tools, domain_policy=self.policy).system_prompt)
        return f"{prompt}\n\n{AWM_MODE_NOTE}"

    async def first_user_message(self) -> str | None:
        """The user's opening message (the episode's instruction), or None when τ²'s
        conversation ended before the agent's first turn (the user stopped at once).

        Raises :class:`Tau2SimulationError` when the conversation failed instead.
        """
        reply = await asyncio.to_thread(self._next_reply)
        if reply is _END:
            await asyncio.to_thread(self.thread.join, REPLY_TIMEOUT_S)
            if self.simulation is None:
                raise Tau2SimulationError(
                    f"τ²'s conversation on {self.domain} task {self.task.id} failed before the "
                    f"user's first message (check --user-model): {self.error!r}"
                )
            self._ended = True
            return None
        return str(getattr(reply, "content", "") or "")

    async def act(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Make the agent's move and return the orchestrator's answer to it."""
        if self._ended or not self.thread.is_alive() or self._finished:
            return ToolResult(content=ENDED, is_error=True)
        message_cls = attr("tau2.data_model.message", "AssistantMessage")
        if name == MESSAGE_TOOL:
            text = str(arguments.get("message", ""))
            self._actions.put(message_cls(role="assistant", content=text))
        else:
            call = attr("tau2.data_model.message", "ToolCall")(
                id=f"call_{self._calls}", name=name, arguments=arguments, requestor="assistant"
            )
            self._calls += 1
            self._actions.put(message_cls(role="assistant", content=None, tool_calls=[call]))
        reply = await asyncio.to_thread(self._next_reply)
        if reply is _END:
            self._ended = True
            return ToolResult(content=ENDED, is_error=True)
        content = getattr(reply, "content", None)
        if content is None and hasattr(reply, "tool_messages"):  # several results at once
            content = "\n".join(str(m.content) for m in reply.tool_messages)
        return ToolResult(content=str(content or ""), is_error=bool(getattr(reply, "error", False)))

    async def finish(self, final_message: str) -> Any:
        """Send the episode's final answer, wait for the conversation to end, return it."""
        if self.thread.is_alive() and not self._finished:
            self._finished = True
            message_cls = attr("tau2.data_model.message", "AssistantMessage")
            self._actions.put(message_cls(role="assistant", content=final_message or "Goodbye."))
        await asyncio.to_thread(self.thread.join, REPLY_TIMEOUT_S)
        return self.simulation


class Tau2Session:
    """The τ² conversation as an awm :class:`awm_core.session.EnvInstance` (no database)."""

    def __init__(self, bridge: Tau2Bridge) -> None:
        self.bridge = bridge
        self.env_id = f"tau2/{bridge.domain}/{bridge.task.id}"

    async def list_tools(self) -> list[ToolSpec]:
        specs = []
        for tool in self.bridge.tools:
            function = tool.openai_schema["function"]
            specs.append(
                ToolSpec(
                    name=function["name"],
                    description=str(function.get("description", "")),
                    input_schema=function.get("parameters") or {"type": "object"},
                )
            )
        return [*specs, MESSAGE_SPEC]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return await self.bridge.act(name, arguments)

    async def snapshot(self) -> None:
        """None: τ²'s state lives in its own environment, not in an awm database."""
        return None


@dataclass
class Tau2Judge:
    """Ends the conversation with the episode's final answer; scores it with τ²'s evaluator."""

    bridge: Tau2Bridge
    name: str = "tau2"
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)

    async def judge(self, request: JudgeRequest) -> Verdict:
        simulation = await self.bridge.finish(request.trajectory.final_answer or "")
        if simulation is None:
            return Verdict(
                label=VerdictLabel.ENVIRONMENT_ERROR,
                reasoning=f"τ² did not finish: {self.bridge.error!r}",
                judge=self.name,
            )
        self.reward, self.info = evaluate(simulation, self.bridge.task, self.bridge.domain)
        ok = is_success(self.reward)
        return Verdict(
            label=VerdictLabel.COMPLETED if ok else VerdictLabel.PARTIALLY_COMPLETED,
            reasoning=f"τ² reward {self.reward} ({simulation.termination_reason.value})",
            judge=self.name,
            evidence=self.info,
        )


def evaluate(simulation: Any, task: Any, domain: str) -> tuple[float, dict[str, Any]]:
    """τ²'s own evaluation of a finished simulation (DB, actions, communicate, env assertions)."""
    evaluator = module("tau2.evaluator.evaluator")
    info = evaluator.evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=evaluator.EvaluationType.ALL,
        solo_mode=False,
        domain=domain,
    )
    simulation.reward_info = info
    return describe(simulation)


def describe(simulation: Any) -> tuple[float, dict[str, Any]]:
    """``(reward, details)`` of a simulation τ² has evaluated."""
    info = simulation.reward_info
    breakdown = info.reward_breakdown or {}
    details = {
        "termination": simulation.termination_reason.value,
        "reward_basis": [str(getattr(b, "value", b)) for b in (info.reward_basis or [])],
        "reward_breakdown": {str(getattr(k, "value", k)): v for k, v in breakdown.items()},
        "messages": len(simulation.messages),
    }
    return float(info.reward), details


def is_success(reward: float) -> bool:
    """τ²'s success rule (``agent_metrics.is_successful``)."""
    return bool(attr("tau2.metrics.agent_metrics", "is_successful")(reward))


@dataclass
class Tau2Run:
    """One τ² task run in awm mode."""

    reward: float
    info: dict[str, Any]
    trajectory: Trajectory | None
    simulation: Any


async def run_task_awm(
    domain: str,
    task: Any,
    policy_for: Callable[[Task], ActingPolicy],
    *,
    user_llm: str,
    user_llm_args: dict[str, Any],
    reference: list[Any] | None = None,
    settings: EpisodeSettings = TAU2_SETTINGS,
    max_steps: int | None = None,
) -> Tau2Run:
    """Roll ``task`` out with an awm policy through awm's rollout function.

    ``max_steps`` is τ²'s step limit (its own default when None); the episode's own
    cap (``settings.max_steps``) becomes that plus one turn for its ``list_tools``, and
    ``settings.system_prompt`` τ²'s agent prompt (:meth:`Tau2Bridge.system_prompt`). A
    conversation that ends before the agent's first turn has no episode (``trajectory``
    None) and is scored as τ² left it.
    """
    bridge = Tau2Bridge(domain, task, user_llm, user_llm_args, max_steps=max_steps)
    bridge.start()
    first = await bridge.first_user_message()
    if first is None:
        reward, info = evaluate(bridge.simulation, task, domain)
        return Tau2Run(reward, info, None, bridge.simulation)
    limit = bridge.orchestrator.max_steps
    settings = replace(settings, system_prompt=bridge.system_prompt(), max_steps=limit + 1)
    awm_task = Task(
        id=f"{domain}_{task.id}",
        instruction=first,
        complexity=Complexity.MEDIUM,
        reference_solution=reference,
        reference_answer="Thank you, goodbye.",
        tags=["tau2", domain],
    )
    session = Tau2Session(bridge)
    judge = Tau2Judge(bridge)
    done = await rollout_episode(
        session,
        awm_task,
        policy_for(awm_task),
        env_id=session.env_id,
        initial=None,
        judge=judge,
        settings=settings,
    )
    reward = judge.reward if judge.reward is not None else 0.0
    info = judge.info or {"error": repr(bridge.error) if bridge.error else done.judge_error}
    return Tau2Run(reward, info, done.trajectory, bridge.simulation)
