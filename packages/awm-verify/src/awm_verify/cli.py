"""``awm verify``: diff two databases, verify a trajectory, measure a judge's reliability.

``awm verify run`` needs no recorded database: a trajectory file holds the tool
calls, so the command replays the calls that succeeded on a fresh instance of the
environment (see :mod:`awm_verify.replay`), then diffs, runs the task's verifier
in the sandbox, judges and rewards.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from awm_core import get_judge
from awm_core.contracts import DEFAULT_JUDGE, Judge, JudgeRequest, default_judge
from awm_core.dbdiff import RenderLimits, diff_databases
from awm_core.errors import AWMError
from awm_core.models import Task, Trajectory, VerifierResult
from awm_envs.verifiers.pool import VerifierPool
from awm_verify.reliability import reliability_report
from awm_verify.replay import ReplayReport, replay_trajectory
from awm_verify.rewards import resolve_reward
from awm_verify.verify import VerificationReport

if TYPE_CHECKING:
    from awm_envs import Environment


class TrajectoryFileError(AWMError):
    """A trajectory file could not be read or is not a Trajectory."""


class TrajectoryMismatchError(AWMError):
    """A trajectory is verified against an environment it was not recorded in."""


def _emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def load_trajectories(path: Path) -> list[Trajectory]:
    """Trajectories from a ``.json`` file (one or a list), a ``.jsonl`` file or a folder of them."""
    files = sorted(path.glob("*.json*")) if path.is_dir() else [path]
    out: list[Trajectory] = []
    for f in files:
        try:
            text = f.read_text()
            if f.suffix == ".jsonl":
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                data = json.loads(text)
                items = data if isinstance(data, list) else [data]
            out.extend(Trajectory.model_validate(item) for item in items)
        except (OSError, ValueError) as exc:
            raise TrajectoryFileError(
                f"{f} is not a trajectory file ({exc}); see `awm schema trajectory`"
            ) from exc
    if not out:
        raise TrajectoryFileError(f"no trajectories found in {path}")
    return out


def _find_task(env: Environment, task_id: str) -> Task:
    for task in env.tasks:
        if task.id == task_id:
            return task
    known = ", ".join(t.id for t in env.tasks)
    raise AWMError(f"environment {env.id} has no task {task_id!r}; its tasks: {known}")


def _judge(name: str, model: str | None) -> Judge:
    options: dict[str, Any] = {}
    if model is not None:
        if name == "code":
            raise click.UsageError("--model has no effect with --judge code")
        options["model"] = model
    return get_judge(name, **options)


def _prepare(
    env_ref: str, trajectory: Trajectory, task_id: str | None, pool: VerifierPool
) -> tuple[JudgeRequest, ReplayReport]:
    from awm_core.dbdiff import diff_images
    from awm_envs import load_environment  # awm-envs is heavy: import only when verifying

    env = load_environment(env_ref)
    if trajectory.env_id and trajectory.env_id != env.id:
        raise TrajectoryMismatchError(
            f"the trajectory was recorded in environment {trajectory.env_id!r}, not {env.id!r}: "
            f"pass --env {trajectory.env_id} (or the bundle folder it came from)"
        )
    task = _find_task(env, task_id or trajectory.task_id)
    final, replay = replay_trajectory(env, trajectory)
    source = env.verifier_source
    verification: VerifierResult | None = None
    if source is not None and task.verifier:
        verification = pool.run(
            source,
            initial=env.template,
            final=final,
            function=task.verifier,
            final_answer=trajectory.final_answer,
        )
        if task.user is not None:  # a conversation: the communication checks decide too
            from awm_verify.verify import with_communication

            verification = with_communication(task, trajectory, verification)
    diff = diff_images(env.template, final)
    return JudgeRequest(task, trajectory, verification, diff), replay


@click.group(name="verify")
def verify_group() -> None:
    """Verify episodes: state diffs, sandboxed verifiers, judges and rewards."""


@verify_group.command(name="diff")
@click.argument("before", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("after", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the structured diff as JSON.")
@click.option("--max-rows", default=20, show_default=True, help="Rows shown per table.")
@click.option("--max-chars", default=6000, show_default=True, help="Characters in the whole text.")
def diff_command(before: Path, after: Path, as_json: bool, max_rows: int, max_chars: int) -> None:
    """Show what changed between two SQLite database files."""
    d = diff_databases(before, after)
    if as_json:
        _emit({"counts": d.counts().model_dump(), **d.model_dump(mode="json")})
        return
    click.echo(d.render(RenderLimits(max_rows_per_table=max_rows, max_chars=max_chars)))


@verify_group.command(name="run")
@click.option(
    "--env",
    "env_ref",
    default=None,
    help="Environment id or bundle folder (default: the one the trajectory names).",
)
@click.option("--task", "task_id", default=None, help="Task id (default: the trajectory's).")
@click.argument("trajectory_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--judge",
    "judge_name",
    default=None,
    help="code (the task's verifier, no model; the default), llm or code+llm "
    "(need --model; the default when --model is given).",
)
@click.option("--model", default=None, help="Judge model spec, e.g. openai:gpt-4o.")
@click.option("--reward", "reward_spec", default="default", show_default=True)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Write the verdict into the trajectory file (metadata.verdict), for awm view.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run_command(
    env_ref: str | None,
    task_id: str | None,
    trajectory_file: Path,
    judge_name: str | None,
    model: str | None,
    reward_spec: str,
    save: bool,
    as_json: bool,
) -> None:
    """Replay a trajectory, run the task's verifier, judge it and print the reward.

    TRAJECTORY_FILE is what awm run keeps (runs/.../trajectory.json, or --out FILE).
    The environment is the one the trajectory was recorded in unless --env says
    otherwise. The default judge, code, needs no model; with --model it is
    code+llm. The verdict (label, reward, reasoning, verifier result, database
    diff) is written back into a one-trajectory .json file, so awm view shows it.
    """
    (trajectory,) = load_trajectories(trajectory_file)[:1]
    if env_ref is None:
        if not trajectory.env_id:
            raise click.UsageError("the trajectory names no environment: pass --env ENV")
        env_ref = trajectory.env_id
    if judge_name is None:
        judge_name = default_judge(model)
    judge = _judge(judge_name, model)
    reward_fn = resolve_reward(reward_spec)
    with VerifierPool(size=1) as pool:
        request, replay = _prepare(env_ref, trajectory, task_id, pool)
    verdict = asyncio.run(judge.judge(request))
    reward = reward_fn(verdict, trajectory)
    v = request.verification
    saved = save and _save_verdict(
        trajectory_file,
        trajectory,
        VerificationReport(
            env_id=trajectory.env_id,
            task_id=request.task.id,
            verdict=verdict,
            reward=reward,
            verification=v,
            diff=request.diff,
        ),
    )
    if as_json:
        _emit(
            {
                "env_id": trajectory.env_id,
                "task_id": request.task.id,
                "verdict": verdict.model_dump(mode="json"),
                "reward": reward.model_dump(mode="json"),
                "verification": v.model_dump(mode="json") if v else None,
                "diff_counts": request.diff.counts().model_dump() if request.diff else None,
                "replay": replay.model_dump(),
            }
        )
        return
    click.echo(f"task:    {request.task.id}")
    click.echo(f"verdict: {verdict.label.value} ({verdict.judge})")
    click.echo(f"reward:  {reward.value:g}  {reward.reason}")
    click.echo(f"reason:  {verdict.reasoning}")
    if v is not None:
        if v.error:
            click.echo(f"verifier {v.function}: {v.error.kind.value}: {v.error.message}")
        else:
            click.echo(f"verifier {v.function}: complete={v.complete}")
            click.echo(json.dumps(v.evidence, indent=2, default=str))
    if replay.divergences:
        click.echo("replay diverged from the episode:")
        for line in replay.divergences:
            click.echo(f"  {line}")
    if request.diff is not None:
        click.echo(request.diff.render())
    if saved:
        click.echo(f"verdict saved in {trajectory_file} (awm view {trajectory_file})")


def _save_verdict(path: Path, trajectory: Trajectory, report: VerificationReport) -> bool:
    """Write the verdict into ``path`` when it holds this one trajectory as JSON (a
    ``.jsonl`` or a list holds several: left as it is). True when written."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if path.suffix != ".json" or not isinstance(data, dict):
        return False
    trajectory.metadata["verdict"] = report.to_record()
    partial = path.with_name(path.name + ".partial")
    partial.write_text(trajectory.model_dump_json(indent=2) + "\n", encoding="utf-8")
    partial.replace(path)
    return True


@verify_group.command(name="reliability")
@click.argument("trajectories", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--env", "env_ref", default=None, help="Environment (default: each trajectory's env_id)."
)
@click.option("--judge", "judge_name", default=DEFAULT_JUDGE, show_default=True)
@click.option("--model", default=None, help="Judge model spec, e.g. openai:gpt-4o.")
@click.option("--trials", default=5, show_default=True, help="Judge runs per trajectory (K).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def reliability_command(
    trajectories: Path,
    env_ref: str | None,
    judge_name: str,
    model: str | None,
    trials: int,
    as_json: bool,
) -> None:
    """Judge each trajectory K times: self-consistency, agreement, Fleiss' kappa, flip rate."""
    if trials < 2:
        raise click.UsageError("--trials must be at least 2")
    items = load_trajectories(trajectories)
    judge = _judge(judge_name, model)
    with VerifierPool(size=2) as pool:
        requests = [_prepare(env_ref or t.env_id, t, None, pool)[0] for t in items]

    async def all_trials() -> list[list[str]]:
        rows = await asyncio.gather(
            *(asyncio.gather(*(judge.judge(r) for _ in range(trials))) for r in requests)
        )
        return [[v.label.value for v in row] for row in rows]

    labels = asyncio.run(all_trials())
    report = reliability_report(labels)
    if as_json:
        _emit({"judge": judge_name, **report.model_dump(), "labels": labels})
        return
    click.echo(f"judge {judge_name}: {report.n_items} trajectories x {report.n_trials} trials")
    click.echo(f"self-consistency:   {report.self_consistency:.1%}")
    click.echo(f"pairwise agreement: {report.pairwise_agreement:.1%}")
    kappa = (
        "undefined (one label throughout)"
        if report.fleiss_kappa is None
        else f"{report.fleiss_kappa:.3f}"
    )
    click.echo(f"Fleiss' kappa:      {kappa}")
    click.echo(f"reward flip rate:   {report.reward_flip_rate:.1%}")
    click.echo(f"labels: {report.label_counts}")
