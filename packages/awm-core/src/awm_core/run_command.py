"""``awm run``: one episode from the command line, printed with rich or as JSON.

Environments are found by id. ``fake_notes`` (awm-core's in-memory notes app)
is always there. Any other id is looked up in the registry kind
``environment source`` (the ``register_env_sources`` hook, which awm-envs
implements). A source that can run episodes offers, besides ``list_ids()`` and
``path(env_id)``:

* ``open_session(env_id)`` returning an :class:`EnvSession` (or an awaitable of one);
* ``tasks(env_id)`` returning the environment's :class:`Task` list;
* optionally ``env_id(ref)``, the canonical id a trajectory records.

A bundle folder path that no source lists is handed to the first source that
can open sessions (awm-envs' catalog source opens any bundle folder, in a
sandbox worker when it is not a shipped catalog bundle).

That is the whole hook point: awm-core does not depend on awm-envs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from awm_core.conversation import SEND_MESSAGE_TO_USER
from awm_core.episode import (
    ActingPolicy,
    EpisodeSettings,
    Policy,
    ReferencePolicy,
    StepChecks,
    run_episode,
)
from awm_core.errors import AWMError, UnknownNameError
from awm_core.fake_env import ENV_ID as FAKE_ENV_ID
from awm_core.fake_env import FakeNotesEnv
from awm_core.models import Complexity, Task, Termination, Trajectory
from awm_core.registry import get_backend, get_env_sources, get_user_simulator
from awm_core.session import EnvSession


class EnvironmentSourceError(AWMError):
    """An environment source lists the id but cannot open a session for it."""


async def open_environment(env_id: str) -> tuple[EnvSession, list[Task], str]:
    """A session, the tasks and the canonical id of ``env_id`` (see the module docstring)."""
    if env_id == FAKE_ENV_ID:
        return FakeNotesEnv(), FakeNotesEnv.tasks(), FAKE_ENV_ID
    sources = get_env_sources()
    known = [FAKE_ENV_ID]
    chosen: tuple[str, Any] | None = None
    for name, source in sources.items():
        ids = list(source.list_ids())
        known += ids
        if env_id in ids:
            chosen = (name, source)
            break
    if chosen is None and Path(env_id).is_dir():  # a bundle folder: any source that opens them
        chosen = next(
            ((n, s) for n, s in sources.items() if getattr(s, "open_session", None)), None
        )
        if chosen is None:
            raise EnvironmentSourceError(
                f"{env_id} is a folder, but no installed environment source can open sessions; "
                "install awm-envs (pip install awm-envs)"
            )
    if chosen is None:
        raise UnknownNameError("environment", env_id, known)
    name, source = chosen
    opener = getattr(source, "open_session", None)
    if opener is None:
        raise EnvironmentSourceError(
            f"environment source {name!r} lists {env_id!r} but cannot open sessions; "
            "install or upgrade awm-envs (pip install awm-envs)"
        )
    tasks_fn = getattr(source, "tasks", None)
    tasks = list(tasks_fn(env_id)) if tasks_fn is not None else []
    id_fn = getattr(source, "env_id", None)
    canonical = str(id_fn(env_id)) if id_fn is not None else env_id
    session = opener(env_id)
    if inspect.isawaitable(session):
        session = await session
    return session, tasks, canonical


def pick_task(tasks: list[Task], task_id: str | None, instruction: str | None) -> Task:
    """The task named ``task_id``, an ad-hoc task from ``instruction``, or the first task."""
    if instruction:
        return Task(id="adhoc", instruction=instruction, complexity=Complexity.EASY)
    if task_id is None:
        if not tasks:
            raise AWMError("this environment ships no tasks; pass --instruction TEXT")
        return tasks[0]
    for task in tasks:
        if task.id == task_id:
            return task
    raise UnknownNameError("task", task_id, [t.id for t in tasks])


def print_trajectory(traj: Trajectory, console: Console) -> None:
    """A readable summary: one row per step, then how it ended."""
    console.print(Panel(escape(traj.instruction), title=escape(f"{traj.env_id} / {traj.task_id}")))
    table = Table(show_lines=True)
    for col in ("#", "reasoning", "call", "result", "model s", "tool s"):
        table.add_column(col, overflow="fold")
    for step in traj.steps:
        call = step.tool_call
        call_text = f"{call.name}({json.dumps(call.arguments)})"[:300] if call else "(final answer)"
        if call is None and step.result is not None:  # a conversation: the turn went to the user
            call_text = f"(to the user) {step.assistant.content}"[:300]
        if step.violation:
            call_text = escape(call_text) + f"\n[red]violation: {escape(step.violation)}[/red]"
        else:
            call_text = escape(call_text)
        result = ""
        if step.result is not None:
            content = step.result.content
            result = content if isinstance(content, str) else json.dumps(content, default=str)
            result = escape(result[:300])
            if call is None or call.name == SEND_MESSAGE_TO_USER:
                result = f"[bold]user:[/bold] {result}"
            if step.result.is_error:
                result = f"[red]{step.result.error_type}[/red] {result}"
        table.add_row(
            str(step.index),
            escape((step.assistant.reasoning or "")[:200]),
            call_text,
            result,
            f"{step.model_latency_s:.2f}",
            f"{step.result.latency_s:.4f}" if step.result else "",
        )
    console.print(table)
    colour = "green" if traj.termination == "final_answer" else "red"
    console.print(f"[{colour}]termination: {traj.termination.value}[/{colour}]")
    if traj.termination_reason:
        console.print(f"reason: {escape(traj.termination_reason)}")
    if traj.final_answer is not None:
        console.print(Panel(escape(traj.final_answer or "(empty)"), title="final answer"))
    console.print(
        f"tokens: {traj.usage.prompt_tokens} prompt + {traj.usage.completion_tokens} completion"
    )


RUNS_ENV = "AWM_RUNS"
"""Where ``awm run`` keeps its runs when no ``--out`` is given (default ``./runs``)."""


class _Keeper:
    """Keeps one episode's trajectory on disk while it grows (each write replaces the file
    whole, so a kill leaves the last complete step, never half a file)."""

    def __init__(self, out: Path | None, save: bool) -> None:
        self.out = out
        self.save = save
        self.path: Path | None = None
        self._last: Trajectory | None = None

    def name(self, env_id: str, task_id: str) -> None:
        if not self.save:
            return
        if self.out is not None:
            self.path = self.out
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{env_id}-{task_id}")
        self.path = Path(os.environ.get(RUNS_ENV) or "runs") / f"{stamp}-{slug}" / "trajectory.json"

    def keep(self, traj: Trajectory) -> None:
        self._last = traj
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(traj.model_dump_json(indent=2) + "\n", encoding="utf-8")
        partial.replace(self.path)

    def interrupted(self) -> Path | None:
        """Mark the kept trajectory as stopped by the user; where it is (None: not kept)."""
        if self._last is None or self.path is None:
            return None
        self._last.termination = Termination.INTERRUPTED
        self._last.termination_reason = "stopped by the user (Ctrl-C)"
        self.keep(self._last)
        return self.path


def _where_is(task_id: str) -> str:
    """Which environments ship a task with this id (for a run that forgot ``--env``)."""
    found: list[str] = []
    for source in get_env_sources().values():
        tasks_fn = getattr(source, "tasks", None)
        if tasks_fn is None:
            continue
        for env in source.list_ids():
            try:
                if any(t.id == task_id for t in tasks_fn(env)):
                    found.append(env)
            except (OSError, ValueError):
                continue
    if not found:
        return "no installed environment has it (awm envs list, awm envs show ENV)"
    return f"it is a task of {', '.join(found)}: pass --env {found[0]}"


async def _save_db(session: EnvSession, path: Path) -> None:
    snapshot = getattr(session, "snapshot", None)
    image = await snapshot() if snapshot is not None else None
    if image is None:
        raise AWMError("this environment has no database to save (--save-db)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(image)


@click.command(name="run")
@click.option(
    "--model",
    "-m",
    "spec",
    default="local:smollm2",
    show_default=True,
    help="LLM backend (openai:MODEL, local:smollm2, scripted:PATH).",
)
@click.option("--env", "env_id", default=FAKE_ENV_ID, show_default=True, help="Environment id.")
@click.option("--task", "task_id", default=None, help="Task id (default: the first task).")
@click.option("--instruction", default=None, help="Run an ad-hoc instruction instead of a task.")
@click.option("--reference", is_flag=True, help="Replay the task's reference solution.")
@click.option("--format", "fmt", type=click.Choice(["hermes", "openai"]), default="hermes")
@click.option("--max-steps", default=20, show_default=True, type=int)
@click.option("--history-window", default=3, show_default=True, type=int, help="-1 keeps all.")
@click.option("--temperature", default=None, type=float)
@click.option("--max-tokens", default=None, type=int)
@click.option("--require-reasoning", is_flag=True, help="Fail turns without <think>.")
@click.option(
    "--user-sim",
    "user_sim",
    default=None,
    help="Who plays a conversational task's user: scripted (the task's replies) or llm "
    "(needs --user-model); default scripted, or llm when --user-model is given.",
)
@click.option(
    "--user-model",
    default=None,
    help="The llm user simulator's own model (a backend spec, e.g. openai:gpt-4o-mini).",
)
@click.option("--lenient", is_flag=True, help="Repair near-miss tool calls instead of failing.")
@click.option("--json", "as_json", is_flag=True, help="Print the trajectory as JSON.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Keep the trajectory in this file instead of RUNS/STAMP-ENV-TASK/trajectory.json.",
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help=f"Keep the trajectory (step by step) in ${RUNS_ENV} (default ./runs) or --out.",
)
@click.option(
    "--save-db",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the database before and after the episode as DIR/before.db and "
    "DIR/after.db (awm verify diff DIR/before.db DIR/after.db).",
)
def run_command(
    spec: str,
    env_id: str,
    task_id: str | None,
    instruction: str | None,
    reference: bool,
    fmt: str,
    max_steps: int,
    history_window: int,
    temperature: float | None,
    max_tokens: int | None,
    require_reasoning: bool,
    user_sim: str | None,
    user_model: str | None,
    lenient: bool,
    as_json: bool,
    out: Path | None,
    save: bool,
    save_db: Path | None,
) -> None:
    """Run one episode of a model (or the reference solution) in an environment.

    ENV is an environment id (awm envs list) or a bundle folder. The trajectory is
    kept as it grows, after every step, in RUNS/STAMP-ENV-TASK/trajectory.json
    (RUNS: $AWM_RUNS, default ./runs) or --out FILE: the input of `awm view` and
    `awm verify run`. Ctrl-C keeps the steps so far (termination: interrupted).
    Exits 1 when the model failed (the episode ended in model_error), 2 when the
    model or the environment cannot be set up (a missing key or extra), 130 on Ctrl-C.
    """
    if max_steps < 1:
        raise click.BadParameter("must be at least 1", param_hint="--max-steps")
    keeper = _Keeper(out, save or out is not None)
    ctx = click.get_current_context()
    env_given = ctx.get_parameter_source("env_id") is not click.core.ParameterSource.DEFAULT

    async def go() -> Trajectory:
        policy: ActingPolicy | None = None
        if not reference:
            backend = get_backend(spec)
            load = getattr(backend, "load", None)
            if callable(load):  # a missing extra or model fails here, not as a model_error step
                await asyncio.to_thread(load)
            policy = Policy(backend, temperature=temperature, max_tokens=max_tokens)
        session, tasks, canonical_id = await open_environment(env_id)
        try:
            try:
                task = pick_task(tasks, task_id, instruction)
            except UnknownNameError as exc:
                if env_given or task_id is None:
                    raise
                raise UnknownNameError(
                    "task",
                    task_id,
                    exc.known,
                    hint=f"--env defaults to {FAKE_ENV_ID}; {_where_is(task_id)}",
                ) from None
            keeper.name(canonical_id, task.id)
            if save_db is not None:
                await _save_db(session, save_db / "before.db")
            if policy is None:
                if not task.reference_solution:
                    raise AWMError(f"task {task.id!r} has no reference solution to replay")
                policy = ReferencePolicy(task)
            settings = EpisodeSettings(
                max_steps=max_steps,
                history_window=None if history_window < 0 else history_window,
                fmt=fmt,
                checks=StepChecks(require_reasoning=require_reasoning),
                lenient=lenient,
            )
            user = None
            if task.user is not None:
                name = user_sim or ("llm" if user_model else "scripted")
                options = {"model": user_model} if user_model else {}
                user = get_user_simulator(name, task, **options)
            traj = await run_episode(
                policy,
                session,
                task,
                settings=settings,
                env_id=canonical_id,
                on_step=keeper.keep,
                user=user,
            )
            if save_db is not None:
                await _save_db(session, save_db / "after.db")
            return traj
        finally:
            close = getattr(session, "aclose", None)
            if close is not None:
                await close()

    try:
        traj = asyncio.run(go())
    except KeyboardInterrupt:
        kept = keeper.interrupted()
        where = f"; the steps so far are in {kept}" if kept else ""
        click.echo(f"\ninterrupted{where}", err=True)
        sys.exit(130)
    keeper.keep(traj)
    if as_json:
        click.echo(traj.model_dump_json(indent=2))
    else:
        from awm_core.console import make_console

        print_trajectory(traj, make_console())
        if keeper.path is not None:
            click.echo(f"trajectory written to {keeper.path} (awm view / awm verify run it)")
        if save_db is not None:
            click.echo(f"databases: awm verify diff {save_db / 'before.db'} {save_db / 'after.db'}")
    if traj.termination is Termination.MODEL_ERROR:
        click.echo(f"error: the model failed: {traj.termination_reason}", err=True)
        sys.exit(1)
