"""What the model sees in τ² awm mode, against what τ²'s own harness sends (native).

One fixed case, airline's first task, runs in both modes with the agent and the user
simulator at real local OpenAI-protocol servers (:class:`ScriptedOpenAIServer`), which
record every request. The user opens with a fixed message and stops after the agent's
first message. The agent's requests are compared: they are equal except for the
differences listed in :data:`awm_bench.tau2.episode.AWM_MODE_ADAPTATIONS`, each of
which has a test here and a line in docs/bench.md.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from awm_bench.tau2.episode import (
    AWM_MODE_ADAPTATIONS,
    AWM_MODE_NOTE,
    MESSAGE_SPEC,
    TAU2_SETTINGS,
    run_task_awm,
)
from awm_bench.tau2.native import GREETING, litellm_target, run_task_native
from awm_core import get_backend
from awm_core.episode import META_TOOLS, Policy
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Task
from awm_core.toolcalls import get_format, openai_tool

DOMAIN = "airline"
FIRST = "Hi, I want to cancel my reservation."
AGENT_SAYS = "Let me look that up for you."
LIST_TOOLS_CALL = '<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'
DOCS = Path(__file__).resolve().parents[3] / "docs" / "bench.md"


@dataclass
class Captured:
    """The agent's requests (bodies as sent over HTTP) in each mode, and τ²'s own view."""

    native: list[dict[str, Any]]
    awm: list[dict[str, Any]]
    policy: str
    llm_agent_prompt: str


@pytest.fixture(scope="module")
def captured() -> Captured:
    from tau2.agent.llm_agent import LLMAgent
    from tau2.registry import registry

    task = registry.get_tasks_loader(DOMAIN)()[0]
    environment = registry.get_env_constructor(DOMAIN)()
    policy = environment.get_policy()
    llm_agent_prompt = LLMAgent(tools=environment.get_tools(), domain_policy=policy).system_prompt

    with (
        ScriptedOpenAIServer([FIRST, "###STOP###"]) as user,
        ScriptedOpenAIServer([AGENT_SAYS]) as agent,
    ):
        user_llm, user_args = litellm_target(user.base_url, "user")
        agent_llm, agent_args = litellm_target(agent.base_url, "agent")
        run_task_native(
            DOMAIN,
            task,
            agent_llm=agent_llm,
            agent_args=agent_args,
            user_llm=user_llm,
            user_args=user_args,
        )
        native = list(agent.requests)

    with (
        ScriptedOpenAIServer([FIRST, "###STOP###"]) as user,
        ScriptedOpenAIServer([LIST_TOOLS_CALL, AGENT_SAYS]) as agent,
    ):
        user_llm, user_args = litellm_target(user.base_url, "user")
        backend = get_backend("openai:agent", base_url=agent.base_url, api_key="test")

        def policy_for(task: Task) -> Policy:
            return Policy(backend, temperature=0.0)

        asyncio.run(
            run_task_awm(DOMAIN, task, policy_for, user_llm=user_llm, user_llm_args=user_args)
        )
        awm = list(agent.requests)
    assert len(native) == 1 and len(awm) == 2, (len(native), len(awm))
    return Captured(native, awm, policy, llm_agent_prompt)


def _system(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def _listing(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``list_tools`` result in the awm agent's second request."""
    result = request["messages"][-1]
    assert result["role"] == "tool"
    listing: list[dict[str, Any]] = json.loads(result["content"])
    return listing


# ---------------------------------------------------------------- τ²'s own prompt
def test_native_sends_taus_llm_agent_prompt_with_the_policy(captured: Captured) -> None:
    assert _system(captured.native[0]) == captured.llm_agent_prompt
    assert captured.policy in captured.llm_agent_prompt


def test_awm_mode_shows_the_domain_policy(captured: Captured) -> None:
    for request in captured.awm:
        assert captured.policy in _system(request)


# ---------------------------------------------------------------- each adaptation
def test_adaptation_system_prompt(captured: Captured) -> None:
    """τ²'s prompt verbatim, then the awm note, then the format's meta-tools."""
    native = _system(captured.native[0])
    expected = get_format(TAU2_SETTINGS.fmt).system_prompt(
        f"{native}\n\n{AWM_MODE_NOTE}", META_TOOLS
    )
    assert _system(captured.awm[0]) == expected
    assert _system(captured.awm[1]) == expected


def test_adaptation_greeting(captured: Captured) -> None:
    """The histories differ only by τ²'s greeting before the user's first message."""
    native = captured.native[0]["messages"][1:]
    awm = captured.awm[0]["messages"][1:]
    assert native == [
        {"role": "assistant", "content": GREETING},
        {"role": "user", "content": FIRST},
    ]
    assert awm == native[1:]


def test_adaptation_tools_behind_list_tools(captured: Captured) -> None:
    """τ²'s tool schemas, unchanged, are list_tools' result (the request carries none)."""
    assert all(not r.get("tools") for r in captured.awm)
    listed = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t["description"],
                "parameters": t["input_schema"],
            },
        }
        for t in _listing(captured.awm[1])
        if t["name"] != MESSAGE_SPEC.name
    ]
    assert listed == captured.native[0]["tools"]


def test_adaptation_send_message_to_user(captured: Captured) -> None:
    """The one extra tool, last in the listing."""
    listing = _listing(captured.awm[1])
    assert [t["name"] for t in listing].count(MESSAGE_SPEC.name) == 1
    assert openai_tool(MESSAGE_SPEC)["function"] == {
        "name": listing[-1]["name"],
        "description": listing[-1]["description"],
        "parameters": listing[-1]["input_schema"],
    }
    assert len(listing) == len(captured.native[0]["tools"]) + 1


def test_adaptation_final_answer() -> None:
    """The awm note tells the model that a reply without a call ends the conversation."""
    assert "ends the conversation" in AWM_MODE_NOTE
    assert "send_message_to_user" in AWM_MODE_NOTE


def test_adaptation_sampling(captured: Captured) -> None:
    """The same decoding settings where both send one; τ²'s agent adds tool_choice (and its
    seed, where the awm policy sets none)."""
    native, awm = captured.native[0], captured.awm[0]
    content = {"model", "messages", "tools"}
    native_params = {k: v for k, v in native.items() if k not in content}
    awm_params = {k: v for k, v in awm.items() if k not in content}
    assert native_params["temperature"] == awm_params["temperature"] == 0.0
    assert set(awm_params) <= set(native_params)
    assert set(native_params) - set(awm_params) <= {"seed", "tool_choice"}
    assert all(native_params[k] == v for k, v in awm_params.items())


ADAPTATION_TESTS = {
    "system_prompt": test_adaptation_system_prompt,
    "greeting": test_adaptation_greeting,
    "tools_behind_list_tools": test_adaptation_tools_behind_list_tools,
    "send_message_to_user": test_adaptation_send_message_to_user,
    "final_answer": test_adaptation_final_answer,
    "sampling": test_adaptation_sampling,
}


def test_every_adaptation_has_a_test() -> None:
    assert set(ADAPTATION_TESTS) == set(AWM_MODE_ADAPTATIONS)


def test_every_adaptation_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## τ²-bench") :]
    section = section[: section.find("\n## ", 1)]
    for name in AWM_MODE_ADAPTATIONS:
        assert f"`{name}`" in section, name
