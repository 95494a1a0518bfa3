"""``awm bench quality``: grounded judge evidence, scores, env errors in rollouts, the CLI."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from awm_bench.evaluate import evaluate_environment
from awm_bench.quality import (
    ChecksJudge,
    EnvData,
    LLMQualityJudge,
    assess_quality,
    classify_step,
    count_env_errors,
    gather_evidence,
    read_trajectories,
    render_evidence,
)
from awm_core import get_backend
from awm_core.cli import build_cli, main
from awm_core.episode import Policy, ReferencePolicy
from awm_core.llm.scripted import ScriptedBackend
from awm_core.llm.scripted_server import ScriptedOpenAIServer
from awm_core.models import Complexity, Task, ToolCallStep, Trajectory
from awm_envs import CATALOG_DIR, load_environment

GOOD = {"task_feasibility": 5, "data_alignment": 4, "toolset_completeness": 5, "reasoning": "ok"}


@pytest.fixture(scope="module")
def shop() -> Any:
    data = EnvData.load(load_environment("shop"))
    yield data
    data.close()


def _task(shop: EnvData, task_id: str) -> Task:
    return next(t for t in shop.tasks if t.id == task_id)


def test_the_prompt_shows_the_tools_and_the_database_evidence(shop: EnvData) -> None:
    prompt = render_evidence(gather_evidence(shop, _task(shop, "remove_beanie"), "Completed"))
    assert "remove_from_cart(product_id: integer)" in prompt  # tools with their parameters
    assert "'Wool Beanie': found in products (1 row)" in prompt  # the entity looked up
    assert "CREATE TABLE products" in prompt and '"name": "Wool Beanie"' in prompt  # schema + row
    assert "## Table cart_items" in prompt  # a table the reference solution's tools touch
    assert "Replayed against the environment just now: Completed" in prompt
    assert "tasks proven solvable" in prompt  # the shipped validation record


def test_quoted_values_are_not_looked_up_and_sentence_words_are_not_entities(
    shop: EnvData,
) -> None:
    ev = gather_evidence(shop, _task(shop, "review_latest_delivery"))
    assert [lk.text for lk in ev.lookups] == ["2025-03-02"]
    assert ev.quoted == ["Solid everyday gear", "Works exactly as described."]
    swap = gather_evidence(shop, _task(shop, "swap_trail_shoes"))
    assert [lk.text for lk in swap.lookups] == [
        "Ridgeline Trail Running Shoes",
        "Northpeak Trail Running Shoes",
    ]


async def test_names_the_task_asks_to_write_are_inputs_not_missing_data() -> None:
    """bank's pay_sister adds a payee: her name, bank and date are not in the seed data,
    but the reference solution sends them, so data alignment is not marked down."""
    bank = EnvData.load(load_environment("bank"))
    try:
        task = next(t for t in bank.tasks if t.id == "pay_sister")
        ev = gather_evidence(bank, task, "Completed")
        assert {"Ruth Okoro", "Harbor Credit Union", "2025-07-20"} <= set(ev.quoted)
        assert not [lk.text for lk in ev.lookups if not lk.found]
        assert (await ChecksJudge().rate(ev)).below(3) == []  # not flagged
        # a name nobody sends and the data lacks is still missing data
        renamed = task.model_copy(
            update={"instruction": task.instruction + " Tell my friend Zed Quill too."}
        )
        missing = gather_evidence(bank, renamed, "Completed")
        assert [lk.text for lk in missing.lookups if not lk.found] == ["Zed Quill"]
    finally:
        bank.close()


def test_contractions_and_months_are_not_entities() -> None:
    from awm_bench.quality import extract_literals

    literals, _ = extract_literals(
        "What's owed? Dispute it. Don't pay the Acme Power bill due June 30."
    )
    assert literals == ["Acme Power"]


def test_the_checks_judge_flags_missing_data_and_missing_tools(shop: EnvData) -> None:
    task = Task(
        id="ghost",
        instruction="Add the Zorblax Quantum Blender to my cart.",
        complexity=Complexity.EASY,
        reference_solution=[ToolCallStep(tool="teleport_product", arguments={})],
    )
    rated = asyncio.run(ChecksJudge().rate(gather_evidence(shop, task, replay="Agent Error")))
    assert rated.scores == {"task_feasibility": 1, "data_alignment": 1, "toolset_completeness": 1}
    assert "Zorblax Quantum Blender" in rated.reasoning and "teleport_product" in rated.reasoning
    assert rated.below(3) == ["task_feasibility", "data_alignment", "toolset_completeness"]


def _scores_for(body: dict[str, Any]) -> dict[str, Any]:
    user = body["messages"][-1]["content"]
    if "(remove_beanie," in user:
        return {**GOOD, "task_feasibility": 2, "reasoning": "the beanie is not in the cart"}
    return GOOD


def test_an_openai_endpoint_rates_every_task_and_scores_are_aggregated() -> None:
    with ScriptedOpenAIServer(lambda body: json.dumps(_scores_for(body))) as srv:
        backend = get_backend("openai:judge", base_url=srv.base_url, api_key="x", max_retries=0)
        judge = LLMQualityJudge(backend)
        report = asyncio.run(
            assess_quality([load_environment("shop")], judge, replay=False, limit=3)
        )
        bodies = list(srv.requests)
    assert len(bodies) == 3
    assert bodies[0]["response_format"]["type"] == "json_schema"
    assert "## Tools (27)" in bodies[0]["messages"][1]["content"]
    (env,) = report.envs
    summary = env.summary(3)
    assert summary["mean"]["task_feasibility"] == pytest.approx((5 + 2 + 5) / 3, abs=1e-3)
    assert summary["mean"]["data_alignment"] == 4.0
    assert summary["below_threshold"]["task_feasibility"] == pytest.approx(1 / 3, abs=1e-3)
    assert summary["flagged"] == ["remove_beanie"]
    beanie = next(t for t in env.tasks if t.task_id == "remove_beanie")
    assert beanie.reasoning == "the beanie is not in the cart"
    assert env.errors is None  # no rollouts, no replay: nothing to count


def test_a_malformed_answer_is_sent_back_with_the_problem(shop: EnvData) -> None:
    backend = ScriptedBackend(
        ["I think it is fine.", json.dumps({**GOOD, "task_feasibility": 9}), json.dumps(GOOD)]
    )
    rated = asyncio.run(LLMQualityJudge(backend).rate(gather_evidence(shop, shop.tasks[0])))
    assert rated.error is None and rated.attempts == 3
    assert rated.scores["task_feasibility"] == 5
    assert "not JSON" in rated.malformed_replies[0]
    assert "task_feasibility" in rated.malformed_replies[1]
    last_prompt = backend.calls[-1][-1].content
    assert last_prompt.startswith("That reply cannot be used") and "task_feasibility" in last_prompt


def test_a_judge_that_never_answers_usably_leaves_the_task_unjudged() -> None:
    judge = LLMQualityJudge(ScriptedBackend(["nope"] * 3 + [json.dumps(GOOD)]))
    report = asyncio.run(
        assess_quality([load_environment("shop")], judge, replay=False, limit=2, concurrency=1)
    )
    first, second = report.envs[0].tasks
    assert first.error is not None and "3 attempt(s)" in first.error
    assert first.scores == dict.fromkeys(first.scores)  # no scores, no crash
    assert second.error is None and second.scores["toolset_completeness"] == 5
    summary = report.envs[0].summary(3)
    assert summary["unjudged"] == [first.task_id] and summary["mean"]["data_alignment"] == 4.0


def test_a_failing_backend_is_reported_per_task_not_raised() -> None:
    judge = LLMQualityJudge(ScriptedBackend([]))  # exhausted at once: LLMError
    report = asyncio.run(assess_quality([load_environment("shop")], judge, replay=False, limit=1))
    (task,) = report.envs[0].tasks
    assert task.error is not None and "script exhausted" in task.error


# --------------------------------------------------------------------------- env errors


@pytest.fixture(scope="module")
def broken_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shop with a get_cart that raises: an environment bug, not an agent fault."""
    root = tmp_path_factory.mktemp("envs") / "broken_shop"
    shutil.copytree(CATALOG_DIR / "shop", root)
    app = root / "app.py"
    source = app.read_text(encoding="utf-8")
    marker = '    """Your shopping cart with current prices and subtotal."""\n'
    assert marker in source
    app.write_text(
        source.replace(marker, marker + '    raise RuntimeError("cart table is corrupt")\n'),
        encoding="utf-8",
    )
    (root / "tools.json").unlink()  # derived from the edited app instead
    return root


def _call(tool: str, args: dict[str, Any]) -> str:
    body = {"name": "call_tool", "arguments": {"tool_name": tool, "arguments": args}}
    return f"<tool_call>{json.dumps(body)}</tool_call>"


@pytest.fixture(scope="module")
def rollouts(broken_shop: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reference replay that meets the broken tool, and an agent making its own mistakes."""
    env = load_environment(broken_shop)
    beanie = next(t for t in env.tasks if t.id == "remove_beanie")
    trajectories: list[Trajectory] = []
    asyncio.run(
        evaluate_environment(env, ReferencePolicy, tasks=[beanie], trajectories=trajectories)
    )
    agent = ScriptedBackend(
        [
            '<tool_call>{"name": "list_tools", "arguments": {}}</tool_call>',
            _call("remove_from_cart", {"product_id": 99999}),  # not found: the agent's fault
            _call("remove_from_cart", {"product_id": "abc"}),  # malformed: ends the episode
        ]
    )
    asyncio.run(
        evaluate_environment(
            env, lambda task: Policy(agent), tasks=[beanie], trajectories=trajectories
        )
    )
    path = tmp_path_factory.mktemp("rollouts") / "trajectories.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in trajectories), encoding="utf-8")
    return path


def test_env_errors_count_the_failing_tool_and_not_the_agents_mistakes(rollouts: Path) -> None:
    trajectories, skipped = read_trajectories(rollouts)
    assert skipped == 0 and len(trajectories) == 2
    (errors,) = count_env_errors(trajectories).values()
    assert errors.episodes == 2
    assert errors.env_errors == 1 and errors.env_error_episodes == 1
    assert errors.by_tool["get_cart"].env_errors == 1
    assert "cart table is corrupt" in errors.by_tool["get_cart"].examples[0]
    remove = errors.by_tool["remove_from_cart"]
    assert remove.env_errors == 0 and remove.agent_errors == 2  # not found + malformed call
    kinds = [classify_step(s) for t in trajectories for s in t.steps]
    assert kinds.count("env") == 1


def test_the_cli_counts_env_errors_from_a_rollout_file(broken_shop: Path, rollouts: Path) -> None:
    result = CliRunner().invoke(
        build_cli(),
        [
            "bench",
            "quality",
            str(broken_shop),
            "--rollouts",
            str(rollouts),
            "--limit",
            "2",
            "--json",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    (env,) = json.loads(result.output)["environments"]
    assert env["env_errors"]["env_errors"] == 1
    assert env["env_errors"]["by_tool"]["get_cart"]["env_errors"] == 1
    assert "not validated" in env["validation"]  # an edited bundle has no proof


def test_the_default_replay_finds_the_broken_tool(broken_shop: Path) -> None:
    result = CliRunner().invoke(
        build_cli(), ["bench", "quality", str(broken_shop), "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    (env,) = json.loads(result.output)["environments"]
    assert env["env_errors"]["by_tool"]["get_cart"]["env_errors"] >= 1
    beanie = next(t for t in env["tasks"] if t["task_id"] == "remove_beanie")
    assert beanie["scores"]["task_feasibility"] == 2  # its reference path hits the bug
    assert "cart table is corrupt" in beanie["reasoning"]
    assert "remove_beanie" in env["flagged"]


# --------------------------------------------------------------------------- CLI


def test_cli_json_and_out_dir_for_a_catalog_env(tmp_path: Path) -> None:
    out = tmp_path / "q"
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "quality", "shop", "--limit", "3", "--json", "--out", str(out)],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["judge"] == "checks" and data["rollouts"] == "reference replay"
    (env,) = data["environments"]
    assert len(env["tasks"]) == 3 and env["mean"]["task_feasibility"] == 5.0
    assert env["env_errors"]["env_errors"] == 0 and env["env_errors"]["tool_calls"] > 0
    assert json.loads((out / "quality.json").read_text()) == data
    assert "<svg" in (out / "quality.html").read_text()


def test_cli_table_output_with_a_scripted_judge(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([json.dumps(GOOD)] * 2))
    result = CliRunner().invoke(
        build_cli(),
        ["bench", "quality", "shop", "--limit", "2", "--judge-model", f"scripted:{script}"],
        catch_exceptions=False,
        # wide enough that the title (it names the long tmp path) does not squeeze the table
        env={"COLUMNS": "240"},
    )
    assert result.exit_code == 0, result.output
    assert "environment quality" in result.output and "4.00 (0% low)" in result.output


def test_cli_exits_1_when_the_judge_rated_nothing(tmp_path: Path) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["garbage"] * 3))
    result = CliRunner().invoke(
        build_cli(),
        [
            "bench",
            "quality",
            "shop",
            "--limit",
            "1",
            "--no-replay",
            "--judge-model",
            f"scripted:{script}",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "unjudged" in result.output


def test_an_unknown_env_is_a_typed_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "quality", "no_such_env"])
    assert exc.value.code == 2
    assert "no environment 'no_such_env'" in capsys.readouterr().err


def test_a_backend_without_its_key_is_a_typed_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("OPENAI_API_KEY", "AWM_OPENAI_API_KEY", "OPENAI_BASE_URL", "AWM_OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["bench", "quality", "shop", "--judge-model", "openai:gpt-4o-mini"])
    assert exc.value.code == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_completed_rollouts_prove_feasibility_without_a_replay(tmp_path: Path) -> None:
    """Rollouts that all completed (the oracle's, from `awm bench tasks`) keep every task
    at feasibility 5; they were once read as 'reference solution not replayed' (4)."""
    runner = CliRunner()
    done = runner.invoke(build_cli(), ["bench", "tasks", "bank", "--out", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    args = ["bench", "quality", "bank", "--rollouts", str(tmp_path / "run"), "--json"]
    result = runner.invoke(build_cli(), [*args, "--no-replay"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (env,) = json.loads(result.stdout)["environments"]
    assert {t["scores"]["task_feasibility"] for t in env["tasks"]} == {5}
    assert not any("not replayed" in t["reasoning"] for t in env["tasks"])
