"""τ²'s user simulator and step limit as τ² sets them: the user model is its own setting
(τ²'s default with a key, a typed error without), the step limit is τ²'s, and a user who
ends the conversation at once is scored as τ² scores it, never a crash.

Models are local OpenAI-protocol servers (:class:`ScriptedOpenAIServer`) answering from
a script; τ² reaches them through litellm, awm through its ``openai:`` backend.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from awm_bench.tau2.episode import Tau2Bridge, Tau2SimulationError, run_task_awm
from awm_bench.tau2.native import litellm_target, run_task_native
from awm_bench.tau2.run import (
    KEY_VARIABLES,
    Tau2UserModelError,
    run_tau2,
    step_limit,
    user_model_for,
)
from awm_core import get_backend
from awm_core.contracts import BenchmarkConfig
from awm_core.episode import Policy
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Task

DOMAIN = "airline"
STOP = "###STOP###"


@pytest.fixture(scope="module")
def task() -> Any:
    from tau2.registry import registry

    return registry.get_tasks_loader(DOMAIN)()[0]


def _policy(base_url: str) -> Any:
    backend = get_backend("openai:agent", base_url=base_url, api_key="test")

    def policy_for(task: Task) -> Policy:
        return Policy(backend, temperature=0.0)

    return policy_for


# ---------------------------------------------------------------- the user model
def test_the_user_model_defaults_to_taus_own_when_a_key_is_set(tmp_path: Path) -> None:
    from tau2.config import DEFAULT_LLM_USER

    config = BenchmarkConfig(out=tmp_path, model="openai:agent")
    for variable in KEY_VARIABLES:
        assert user_model_for(config, {variable: "sk-test"}) == f"openai:{DEFAULT_LLM_USER}"


def test_without_a_key_the_user_model_is_a_typed_error(tmp_path: Path) -> None:
    config = BenchmarkConfig(out=tmp_path, model="openai:agent")
    with pytest.raises(Tau2UserModelError, match="--user-model"):
        user_model_for(config, {})


def test_the_user_model_is_never_the_agents_by_default(tmp_path: Path) -> None:
    config = BenchmarkConfig(out=tmp_path, model="openai:agent")
    assert user_model_for(config, {"OPENAI_API_KEY": "sk-test"}) != config.model


def test_a_given_user_model_is_used(tmp_path: Path) -> None:
    config = BenchmarkConfig(out=tmp_path, model="openai:agent", user_model="local:smollm2")
    assert user_model_for(config, {}) == "local:smollm2"
    assert user_model_for(BenchmarkConfig(out=tmp_path), {}) == "oracle"


def test_the_cli_reports_a_missing_user_model_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from awm_core.cli import main

    for variable in KEY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    argv = ["bench", "run", "tau2", "--model", "openai:agent", "--results", str(tmp_path)]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--user-model" in err and "Traceback" not in err


# ---------------------------------------------------------------- the step limit
def test_the_step_limit_is_taus_own_unless_set(tmp_path: Path) -> None:
    from tau2.config import DEFAULT_MAX_STEPS

    assert step_limit(BenchmarkConfig(out=tmp_path)) == DEFAULT_MAX_STEPS
    assert step_limit(BenchmarkConfig(out=tmp_path, max_steps=7)) == 7
    # 20 was once the CLI's default and read as 'unset': an explicit 20 is 20
    assert step_limit(BenchmarkConfig(out=tmp_path, max_steps=20)) == 20


def test_awm_modes_orchestrator_uses_taus_step_limit(task: Any) -> None:
    from tau2.config import DEFAULT_MAX_STEPS

    bridge = Tau2Bridge(DOMAIN, task, "openai/user", {})
    assert bridge.orchestrator.max_steps == DEFAULT_MAX_STEPS
    assert Tau2Bridge(DOMAIN, task, "openai/user", {}, max_steps=3).orchestrator.max_steps == 3


def test_a_conversation_past_the_step_limit_ends_as_taus_max_steps(task: Any) -> None:
    lookup = '<tool_call>\n{"name": "call_tool", "arguments": {"tool_name": "get_user_details", "arguments": {"user_id": "x"}}}\n</tool_call>'  # noqa: E501
    listing = '<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'
    with (
        ScriptedOpenAIServer(["I need help."]) as user,
        ScriptedOpenAIServer([listing, lookup, "Goodbye."]) as agent,
    ):
        user_llm, user_args = litellm_target(user.base_url, "user")
        run = asyncio.run(
            run_task_awm(
                DOMAIN,
                task,
                _policy(agent.base_url),
                user_llm=user_llm,
                user_llm_args=user_args,
                max_steps=2,
            )
        )
    assert run.info["termination"] == "max_steps"
    assert run.reward == 0.0


# ---------------------------------------------------------------- a user who stops at once
def test_a_user_who_stops_at_once_is_scored_as_taus_own_run(task: Any) -> None:
    with ScriptedOpenAIServer(lambda body: STOP) as user, ScriptedOpenAIServer([]) as agent:
        user_llm, user_args = litellm_target(user.base_url, "user")
        agent_llm, agent_args = litellm_target(agent.base_url, "agent")
        awm = asyncio.run(
            run_task_awm(
                DOMAIN, task, _policy(agent.base_url), user_llm=user_llm, user_llm_args=user_args
            )
        )
        native_reward, native_info, _ = run_task_native(
            DOMAIN,
            task,
            agent_llm=agent_llm,
            agent_args=agent_args,
            user_llm=user_llm,
            user_args=user_args,
        )
        assert agent.request_count == 0
    assert awm.trajectory is None
    assert awm.info["termination"] == "user_stop"
    assert (awm.reward, awm.info) == (native_reward, native_info)


def test_a_user_who_stops_at_once_is_a_scored_row_of_the_run(
    tmp_path: Path, task: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awm_bench.report import build_report

    with ScriptedOpenAIServer(lambda body: STOP) as server:
        monkeypatch.setenv("AWM_OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("AWM_OPENAI_API_KEY", "test")
        config = BenchmarkConfig(
            out=tmp_path / "tau2" / "agent", model="openai:agent", user_model="openai:user"
        )
        summary = run_tau2(config, [(DOMAIN, task)])
    assert summary["user_model"] == "openai:user"
    for mode in ("awm", "native"):
        rows = [
            json.loads(line) for line in (config.out / f"{mode}.jsonl").read_text().splitlines()
        ]
        assert [r["info"]["termination"] for r in rows] == ["user_stop"]
        assert summary["modes"][mode]["cases"] == 1
        assert summary["modes"][mode]["table"]["user model"] == "openai:user"
    (config.out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    build_report(tmp_path)
    assert "openai:user" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_user_model_that_fails_before_speaking_is_a_typed_error(task: Any) -> None:
    from awm_core.llm.scripted_server import HTTPFailure

    with ScriptedOpenAIServer(lambda body: HTTPFailure(400, "no such model")) as user:
        user_llm, user_args = litellm_target(user.base_url, "user")
        with pytest.raises(Tau2SimulationError, match="user-model"):
            asyncio.run(
                run_task_awm(
                    DOMAIN, task, _policy(user.base_url), user_llm=user_llm, user_llm_args=user_args
                )
            )
