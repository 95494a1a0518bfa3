"""awm's own tasks as a benchmark: Pass@1 by complexity, the one engine behind
``awm bench run tasks`` and ``awm bench tasks``.

Every episode goes through :func:`awm_bench.evaluate.evaluate_environment` (the
trainer's rollout path) and is kept the moment it ends: a row in ``awm.jsonl`` (the
run's journal) and the trajectory with its verdict in ``trajectories.jsonl`` (what
``awm view`` opens). A killed or interrupted run started again with the same output
folder runs only the episodes it lacks. The oracle replays each task's reference
solution; a model is judged ``code+llm`` by itself when it is an endpoint
(``openai:...``), ``code`` otherwise (a 135M local model cannot judge), unless a judge
is named.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awm_core.contracts import BenchmarkConfig, Progress
from awm_core.llm.sampling import Sampling

if TYPE_CHECKING:  # the rollout stack loads when a run starts, not with the plugin
    from awm_bench.evaluate import EnvReport, PolicyFactory
    from awm_bench.journal import Journal
    from awm_core.contracts import UserSimulator
    from awm_core.episode import ActingPolicy
    from awm_core.models import Task, Trajectory

DEFAULT_ENVS = ("shop", "bank")
CONVERSATIONAL_ENVS = ("shop", "travel", "tickets", "learning", "social")
"""The catalog environments that ship conversational tasks (``--conversational``'s default)."""


class AwmTasksBenchmark:
    """Pass@1 by complexity on awm's catalog environments (no extra package needed)."""

    name = "tasks"
    title = "awm tasks (Pass@1 by complexity)"
    modes: tuple[str, ...] = ("awm",)
    sampling = Sampling(temperature=0.0)  # greedy: Pass@1 of one deterministic attempt

    def available(self) -> str | None:
        return None

    def convert(self, dest: Path, *, limit: int | None = None) -> list[Path]:
        """Copy ``limit`` catalog bundles (they are awm bundles already) under ``dest``."""
        from awm_envs import catalog_env_ids, load_environment

        out = []
        for env_id in sorted(catalog_env_ids())[:limit]:
            env = load_environment(env_id)
            target = dest / env_id
            shutil.copytree(env.path, target, dirs_exist_ok=True)
            out.append(target)
        return out

    def run(self, config: BenchmarkConfig) -> dict[str, Any]:
        envs, task_ids = _selection(config.only, config.full)
        return run_tasks(
            TasksRun(
                out=config.out,
                model=config.model,
                envs=envs,
                task_ids=task_ids,
                limit=None if config.full else config.limit,
                trials=config.trials,
                max_steps=config.max_steps,
                sampling=config.sampling,
                progress=config.progress,
            )
        ).summary


def _selection(only: Sequence[str], full: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``--only`` entries are environments (``shop``) or single tasks (``shop/TASK``)."""
    from awm_envs import catalog_env_ids

    if not only:
        return (tuple(sorted(catalog_env_ids())) if full else DEFAULT_ENVS), ()
    envs = tuple(dict.fromkeys(o.split("/", 1)[0] for o in only))
    return envs, tuple(o for o in only if "/" in o)


ORACLE = "oracle"
"""The ground-truth policy's name (every task's reference solution), as in every benchmark."""


@dataclass(frozen=True)
class TasksRun:
    """One evaluation of a policy on awm tasks (see :func:`run_tasks`).

    ``task_ids``: ``ENV/TASK`` entries to keep (default: every task of ``envs``, or the
    first ``limit`` of each). ``trials``: episodes per task (pass^k over them).
    ``concurrency``: episodes at once per environment. ``judge``: a judge name (default:
    ``code+llm`` with the model itself when it is an endpoint, else ``code``).
    ``conversational``: only tasks with a user section, summarised by pass rate and turns;
    their user is ``scripted`` (the task's replies) unless ``user_model`` names a model
    for the ``llm`` simulator.
    """

    out: Path
    model: str = ORACLE
    envs: tuple[str, ...] = DEFAULT_ENVS
    task_ids: tuple[str, ...] = ()
    limit: int | None = None
    trials: int = 1
    concurrency: int = 8
    workers: int = 0
    judge: str | None = None
    judge_model: str | None = None
    max_steps: int | None = None
    sampling: Sampling = Sampling(temperature=0.0)
    progress: Progress | None = None
    conversational: bool = False
    user_model: str | None = None


@dataclass
class TasksResult:
    """What a run measured: its summary (also ``out/summary.json``) and one report per
    environment (every episode of every trial, finished in this run or an earlier one)."""

    summary: dict[str, Any]
    reports: list[EnvReport]
    wall_s: float


def _episode_key(env_id: str, task_id: str, trial: int) -> str:
    return f"{env_id}/{task_id}#{trial}"


def run_tasks(run: TasksRun) -> TasksResult:
    """Roll out the chosen tasks ``run.trials`` times, keep every episode as it ends,
    skip the episodes an earlier run in ``run.out`` already kept, and summarise."""
    from awm_bench.evaluate import EpisodeOutcome, evaluate_environment
    from awm_bench.journal import Journal
    from awm_bench.report_html import render_report
    from awm_core import get_judge
    from awm_core.contracts import Judge, default_judge
    from awm_core.episode import EpisodeSettings
    from awm_envs import load_environment

    environments = {e: load_environment(e) for e in run.envs}  # unknown ids fail first
    tasks = _chosen_tasks(run, environments)
    run.out.mkdir(parents=True, exist_ok=True)
    keys = [
        _episode_key(env_id, task.id, trial)
        for env_id, chosen in tasks.items()
        for trial in range(run.trials)
        for task in chosen
    ]
    journal = Journal(run.out / "awm.jsonl", "key", keys, label="tasks awm", progress=run.progress)
    trajectories = run.out / "trajectories.jsonl"
    _drop_unjournaled(trajectories, journal)
    judge_model = run.judge_model
    if run.judge is None and judge_model is None and run.model.startswith("openai:"):
        judge_model = run.model  # an endpoint under test judges itself
    judge_name = run.judge or default_judge(judge_model)
    judge: Judge = get_judge(judge_name, **({"model": judge_model} if judge_model else {}))
    started = time.perf_counter()
    new_reports: dict[str, EnvReport] = {}
    with asyncio.Runner() as runner:  # one loop: a backend's HTTP client lives on its loop
        for env_id, chosen in tasks.items():
            for trial in range(run.trials):
                todo = [t for t in chosen if _episode_key(env_id, t.id, trial) not in journal]
                if not todo:
                    continue

                def keep(
                    outcome: EpisodeOutcome, trajectory: Trajectory, trial: int = trial
                ) -> None:
                    key = _episode_key(outcome.env_id, outcome.task_id, trial)
                    trajectory.metadata.update(run_key=key, trial=trial, model=run.model)
                    with trajectories.open("a", encoding="utf-8") as fh:
                        fh.write(trajectory.model_dump_json() + "\n")
                    row = {"key": key, "trial": trial, **dataclasses.asdict(outcome)}
                    if run.conversational:
                        row["user_turns"] = _user_turns(trajectory)
                    journal.add(row)

                report = runner.run(
                    evaluate_environment(
                        environments[env_id],
                        _policy_factory(run, trial),
                        tasks=todo,
                        judge=judge,
                        workers=run.workers,
                        pool_size=run.concurrency,
                        concurrency=run.concurrency,
                        settings=EpisodeSettings(
                            max_steps=run.max_steps or EpisodeSettings.max_steps
                        ),
                        on_episode=keep,
                        user_factory=_user_factory(run),
                    )
                )
                new_reports.setdefault(env_id, report)
    wall_s = time.perf_counter() - started
    reports = [_env_report(env_id, journal, new_reports.get(env_id), wall_s) for env_id in tasks]
    summary = _summary(run, judge.name, reports, journal, wall_s)
    (run.out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    html = render_report(
        title="awm bench tasks",
        reports=reports,
        facts={"model": run.model, "judge": judge.name, "wall time": f"{wall_s:.1f} s"},
    )
    (run.out / "report.html").write_text(html, encoding="utf-8")
    return TasksResult(summary, reports, wall_s)


def _user_turns(trajectory: Trajectory) -> int:
    """How many times the agent talked to the user in one episode."""
    from awm_core.conversation import events_from_trajectory

    return sum(1 for e in events_from_trajectory(trajectory) if e.kind == "agent")


def _user_factory(run: TasksRun) -> Callable[[Task], UserSimulator | None]:
    """Each conversational task's user: scripted, or the llm simulator on ``run.user_model``."""
    from awm_core.registry import get_user_simulator

    def build(task: Task) -> UserSimulator | None:
        if task.user is None:
            return None
        if run.user_model:
            return get_user_simulator("llm", task, model=run.user_model)
        return get_user_simulator("scripted", task)

    return build


def _conversation_summary(journal: Journal) -> dict[str, Any]:
    """Pass rate and mean turns (agent turns, and of them messages to the user) per episode."""
    rows = list(journal.rows())
    if not rows:
        return {"episodes": 0, "pass_rate": 0.0, "mean_turns": 0.0, "mean_user_turns": 0.0}
    return {
        "episodes": len(rows),
        "pass_rate": sum(r["label"] == "Completed" for r in rows) / len(rows),
        "mean_turns": sum(r["steps"] for r in rows) / len(rows),
        "mean_user_turns": sum(r.get("user_turns", 0) for r in rows) / len(rows),
    }


def _chosen_tasks(run: TasksRun, environments: dict[str, Any]) -> dict[str, list[Task]]:
    from awm_core.errors import UnknownSubsetError

    wanted = {tuple(t.split("/", 1)) for t in run.task_ids}
    out: dict[str, list[Task]] = {}
    for env_id, env in environments.items():
        named = {t for e, t in wanted if e == env_id}
        if named:
            unknown = named - {t.id for t in env.tasks}
            if unknown:
                raise UnknownSubsetError(
                    f"{env_id} has no task(s) {sorted(unknown)}; its tasks: "
                    f"{', '.join(t.id for t in env.tasks)}"
                )
            out[env_id] = [t for t in env.tasks if t.id in named]
        else:
            pool = [t for t in env.tasks if t.user is not None or not run.conversational]
            out[env_id] = list(pool[: run.limit] if run.limit else pool)
        if run.conversational and not named and not out[env_id]:
            raise UnknownSubsetError(
                f"{env_id} has no conversational tasks (tasks with a user section)"
            )
    return out


def _policy_factory(run: TasksRun, trial: int) -> PolicyFactory:
    from awm_core.episode import Policy, ReferencePolicy

    if run.model == ORACLE:
        return ReferencePolicy
    backend = _backend(run.model, run.out, run.sampling, trial)

    def model_policy(task: Task) -> ActingPolicy:
        return Policy(backend)  # decoded with run.sampling for this trial (the backend's)

    return model_policy


_BACKENDS: dict[str, Any] = {}


def _backend(model: str, out: Path, sampling: Sampling, trial: int) -> Any:
    """The model behind a cache in ``out``, one per trial (the trial is in every cache key);
    the model itself is loaded once per process."""
    from awm_core import get_backend
    from awm_core.llm.cache import CachingBackend, ResponseCache

    if model not in _BACKENDS:
        _BACKENDS[model] = get_backend(model)
    return CachingBackend(
        _BACKENDS[model], ResponseCache(out / "cache" / "awm"), sampling=sampling, trial=trial
    )


def _drop_unjournaled(path: Path, journal: Journal) -> None:
    """A run killed between keeping a trajectory and its journal row left a trajectory the
    resumed run will roll out again: drop it, so each episode is kept once."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if (_run_key(line) or "") in journal.done]
    if len(kept) != len(lines):
        path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def _run_key(line: str) -> str | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None  # cut short by a kill
    return data.get("metadata", {}).get("run_key") if isinstance(data, dict) else None


def _env_report(env_id: str, journal: Journal, fresh: EnvReport | None, wall_s: float) -> EnvReport:
    from awm_bench.evaluate import EnvReport, EpisodeOutcome

    fields = {f.name for f in dataclasses.fields(EpisodeOutcome)}
    outcomes = [
        EpisodeOutcome(**{k: v for k, v in row.items() if k in fields})
        for row in journal.rows()
        if row["env_id"] == env_id
    ]
    policy = outcomes[0].policy if outcomes else ""
    reset = fresh.reset_latency_us if fresh is not None else {}
    return EnvReport(env_id, policy, outcomes, reset, fresh.wall_s if fresh else 0.0)


def _summary(
    run: TasksRun,
    judge: str,
    reports: list[EnvReport],
    journal: Journal,
    wall_s: float,
) -> dict[str, Any]:
    from awm_bench.evaluate import BUCKETS

    passed: dict[str, list[int]] = {b: [0, 0] for b in BUCKETS}
    for report in reports:
        for b, (p, t) in report.pass_rate_by_bucket().items():
            passed[b][0] += p
            passed[b][1] += t
    total = [sum(v[0] for v in passed.values()), sum(v[1] for v in passed.values())]
    table: dict[str, Any] = {b: v[0] / v[1] for b, v in passed.items() if v[1]}
    table["overall"] = total[0] / total[1] if total[1] else 0.0
    by_task: dict[str, list[bool]] = {}
    for row in journal.rows():
        by_task.setdefault(f"{row['env_id']}/{row['task_id']}", []).append(
            row["label"] == "Completed"
        )
    # pass^k as τ² defines it: per task, the chance that k of its n trials drawn at
    # random all pass (comb(successes, k) / comb(n, k)), averaged over tasks
    pass_hat = {
        f"pass^{k}": sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in by_task.values())
        / len(by_task)
        for k in range(1, run.trials + 1)
        if by_task and all(len(v) >= k for v in by_task.values())
    }
    subset = ", ".join(run.envs)
    if run.task_ids:
        subset = ", ".join(run.task_ids)
    elif run.limit:
        subset += f" ({run.limit} tasks each)"
    return {
        "benchmark": "tasks",
        "title": AwmTasksBenchmark.title,
        "model": run.model,
        "corruption": None,
        "judge": judge,
        "subset": subset,
        "note": "Pass@1 in %, by the complexity of the reference solution.",
        "wall_s": round(wall_s, 3),
        "trials": run.trials,
        "modes": {
            "awm": {
                "cases": total[1],
                "correct": total[0],
                "table": table,
                "headline": table["overall"],
                "pass_hat_k": pass_hat,
                "complete": len(journal.done) >= len(journal.keys),
                "wall_s": round(wall_s, 2),
            }
        },
        "reports": [r.to_json() for r in reports],
        **({"conversational": _conversation_summary(journal)} if run.conversational else {}),
    }
