"""``awm demo``: the whole loop, offline, in a few minutes on two cores.

synthesize (replay backend, with its self-corrections) -> validate -> EnvPool
-> episode loop (reference policy on every task, the local SmolLM2 on a few)
-> sandboxed verifiers + judge -> rewards -> a rich summary and an HTML report.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from awm_bench.cli import DEFAULT_CATALOG_ENVS
from awm_bench.evaluate import EnvReport, EpisodeOutcome, evaluate_environment
from awm_bench.report_html import render_report
from awm_core import get_backend, get_judge
from awm_core.console import LineProgress
from awm_core.contracts import default_judge
from awm_core.episode import EpisodeSettings, Policy, ReferencePolicy
from awm_core.models import Task, Trajectory

LOCAL_AGENT_SETTINGS = EpisodeSettings(max_steps=6)
"""The local SmolLM2 agent's episodes: a short step budget keeps the demo within minutes."""


@dataclass
class DemoConfig:
    """What ``awm demo`` runs; every field has an offline default."""

    out: Path = Path("awm-demo")
    model: str | None = None  # openai:NAME -> synthesis, agent and judge use the endpoint
    catalog_envs: tuple[str, ...] = DEFAULT_CATALOG_ENVS
    synthesize: bool = True
    local_agent: bool = True
    local_tasks: int = 2
    local_settings: EpisodeSettings = LOCAL_AGENT_SETTINGS
    workers: int = 2
    pool_size: int = 8


@dataclass
class DemoResult:
    """Everything the summary, the report and ``--json`` show."""

    synthesis: dict[str, Any] = field(default_factory=dict)
    validation: list[dict[str, Any]] = field(default_factory=list)
    reports: list[EnvReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    report_path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        reference = [r for r in self.reports if r.policy == "reference"]
        episodes = sum(len(r.outcomes) for r in reference)
        passed = sum(o.passed for r in reference for o in r.outcomes)
        return {
            "wall_s": round(self.wall_s, 1),
            "report": str(self.report_path) if self.report_path else None,
            "synthesis": self.synthesis,
            "validation": self.validation,
            "reference_pass_rate": passed / episodes if episodes else 0.0,
            "environments": [r.to_json() for r in self.reports],
            "notes": self.notes,
        }


def _validate(env_ref: str | Path) -> dict[str, Any]:
    from awm_envs import validate_environment

    v = validate_environment(env_ref)
    proven = sum(t.passed for t in v.tasks)
    return {
        "env_id": v.env_id,
        "path": v.path,
        "tasks": len(v.tasks),
        "proven": proven,
        "passed": v.passed,
        "problems": v.problems[:5],
    }


def _synthesize(out: Path, backend: str) -> tuple[Path | None, dict[str, Any]]:
    """One environment from the synthesis pipeline; returns its bundle and what was corrected."""
    from awm_bench.demo_synth import synthesize_one

    return synthesize_one(out / "synth", backend)


class InterruptedDemo(KeyboardInterrupt):
    """Ctrl-C during the demo; ``result`` holds the steps that finished (already written)."""

    def __init__(self, result: DemoResult) -> None:
        super().__init__()
        self.result = result


def _keep(out: Path, kept: list[Trajectory]) -> Callable[[EpisodeOutcome, Trajectory], None]:
    """Append each finished episode (with its verdict and the model's raw text) to
    ``out/trajectories.jsonl`` the moment it ends, for ``awm view``."""

    def keep(outcome: EpisodeOutcome, trajectory: Trajectory) -> None:
        kept.append(trajectory)
        with (out / "trajectories.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(trajectory.model_dump_json() + "\n")

    return keep


def _wrote(trajectory: Trajectory | None) -> str:
    """What the model wrote in the turn that broke the format, shortened for one line."""
    if trajectory is None:
        return ""
    for step in trajectory.steps:
        if step.violation:
            text = " ".join((step.assistant.content or "").split())
            return f'; it wrote: "{text[:120]}{"…" if len(text) > 120 else ""}"'
    return ""


def _write_outputs(result: DemoResult, config: DemoConfig, judge: str, started: float) -> None:
    """``summary.json`` and ``report.html`` of what has finished so far (after every step,
    so an interrupted demo keeps its finished steps)."""
    result.wall_s = time.perf_counter() - started
    facts = {
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "wall time": f"{result.wall_s:.1f} s",
        "judge": f"{judge} ({config.model})" if config.model else judge,
        "notes": "; ".join(result.notes) or "-",
    }
    html = render_report(
        title="awm demo",
        reports=result.reports,
        synthesis=result.synthesis,
        validation=result.validation,
        facts=facts,
    )
    path = config.out / "report.html"
    path.write_text(html, encoding="utf-8")
    (config.out / "summary.json").write_text(
        json.dumps(result.to_json(), indent=2), encoding="utf-8"
    )
    result.report_path = path


async def _run(config: DemoConfig, console: Console, result: DemoResult) -> DemoResult:
    started = time.perf_counter()
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "trajectories.jsonl").unlink(missing_ok=True)
    kept: list[Trajectory] = []
    judge = default_judge(config.model)
    env_refs: list[str | Path] = list(config.catalog_envs)

    if config.synthesize:
        backend = config.model or "replay"
        console.rule(f"1. synthesize an environment ({backend})")
        bundle, synthesis = await asyncio.to_thread(_synthesize, config.out, backend)
        result.synthesis = synthesis
        for row in synthesis.get("corrections", []):
            console.print(f"  [yellow]{row['stage']}[/] stage: {row.get('detail', '')}")
        if bundle is not None:
            console.print(f"  [green]shipped[/] {bundle}")
            env_refs.insert(0, bundle)
        else:
            result.notes.append("synthesis shipped no environment")
        _write_outputs(result, config, judge, started)

    console.rule(
        "2. validate (initial state not complete, reference completes, wrong attempt rejected)"
    )
    for ref in env_refs:
        v = await asyncio.to_thread(_validate, ref)
        result.validation.append(v)
        mark = "[green]pass[/]" if v["passed"] else "[red]FAIL[/]"
        console.print(f"  {v['env_id']}: {v['proven']}/{v['tasks']} tasks proven {mark}")
    _write_outputs(result, config, judge, started)

    console.rule("3. episodes through an EnvPool, verified and rewarded")
    judge_obj: Any = judge
    if config.model:
        judge_obj = get_judge(judge, model=config.model)
    for i, ref in enumerate(env_refs):
        # the synthesized bundle is untrusted generated code: sandbox workers; catalog: in-process
        workers = config.workers if (config.synthesize and i == 0 and isinstance(ref, Path)) else 0
        report = await evaluate_environment(
            ref,
            lambda task: ReferencePolicy(task),
            judge=judge_obj,
            workers=workers,
            pool_size=config.pool_size,
            on_episode=_keep(config.out, kept),
        )
        result.reports.append(report)
        _write_outputs(result, config, judge, started)
        where = f"{workers} sandbox workers" if workers else "in-process"
        console.print(
            f"  reference policy on {report.env_id} ({where}): {sum(o.passed for o in report.outcomes)}/"
            f"{len(report.outcomes)} completed, {report.env_calls_per_s:,.0f} env calls/s, "
            f"reset {report.reset_latency_us['median']:.1f} µs"
        )

    if config.local_agent or config.model:
        spec = config.model or "local:smollm2"
        console.rule(f"4. a real model as the agent ({spec})")
        try:
            backend_obj = get_backend(spec)
        except Exception as exc:
            result.notes.append(f"agent model {spec} unavailable: {exc}")
            console.print(f"  [yellow]skipped[/]: {exc}")
        else:
            from awm_envs import load_environment

            env = load_environment(config.catalog_envs[0])
            easy: list[Task] = sorted(
                env.tasks, key=lambda t: (len(t.reference_solution or []), t.id)
            )
            chosen = easy[: config.local_tasks] if not config.model else env.tasks
            finished: list[EpisodeOutcome] = []

            def tick(outcome: EpisodeOutcome) -> None:
                finished.append(outcome)
                progress("  model episodes", len(finished), len(chosen))

            # a CPU model takes tens of seconds an episode (its load included): a line at
            # least every 10 s says it is still working
            with LineProgress(every_s=10.0) as progress:
                progress("  model episodes", 0, len(chosen))
                report = await evaluate_environment(
                    env,
                    lambda task: Policy(backend_obj, temperature=0.0, max_tokens=256),
                    tasks=chosen,
                    judge=judge_obj,
                    pool_size=2,
                    concurrency=1,
                    settings=EpisodeSettings() if config.model else config.local_settings,
                    on_episode=_keep(config.out, kept),
                    on_outcome=tick,
                )
            result.reports.append(report)
            by_task = {(t.env_id, t.task_id): t for t in kept}
            for o in report.outcomes:
                why = f" ({o.termination_reason[:100]})" if o.termination_reason else ""
                wrote = _wrote(by_task.get((o.env_id, o.task_id)))
                console.print(
                    f"  {o.task_id}: {o.label}, reward {o.reward:+.1f}, {o.steps} steps, "
                    f"ended by {o.termination}{why}{wrote}",
                    highlight=False,
                )
            console.print(f"  every episode, in full: awm view {config.out}")

    _write_outputs(result, config, judge, started)
    return result


def print_summary(result: DemoResult, console: Console, *, title: str = "awm demo summary") -> None:
    """The closing table: per environment and policy, then the report's path and the wall time."""
    table = Table(title=title)
    # narrow terminals lose the speed figures first, then the rewards (the report has
    # them all); what is left wraps instead of cutting ids to "enviro…"
    dropped = {"env calls/s", "reset µs (median)"} if console.width < 120 else set()
    if console.width < 90:
        dropped.add("rewards")
    columns = [
        "environment",
        "policy",
        "tasks",
        "pass rate",
        "by complexity",
        "rewards",
        "env calls/s",
        "reset µs (median)",
    ]
    for col in columns:
        if col not in dropped:
            table.add_column(col, overflow="fold")
    for r in result.reports:
        buckets = " ".join(f"{b}:{p}/{t}" for b, (p, t) in r.pass_rate_by_bucket().items())
        rewards = " ".join(f"{k}×{v}" for k, v in r.reward_distribution().items())
        cells = [
            r.env_id,
            r.policy,
            str(len(r.outcomes)),
            f"{r.pass_rate:.0%}",
            buckets,
            rewards,
            f"{r.env_calls_per_s:,.0f}",
            # a resumed run that had nothing left to roll out measured no reset
            f"{r.reset_latency_us['median']:.1f}" if r.reset_latency_us else "-",
        ]
        table.add_row(*(c for col, c in zip(columns, cells, strict=True) if col not in dropped))
    console.print(table)
    footer = [f"wall time: {result.wall_s:.1f} s"]
    if result.report_path is not None:
        footer.insert(0, f"report: {result.report_path}")
    console.print("   ".join(footer))


def run_demo(config: DemoConfig, console: Console | None = None) -> DemoResult:
    """Run the demo and return its results (the CLI prints them).

    Ctrl-C raises :class:`InterruptedDemo` at once, carrying the steps that finished;
    their report, summary and trajectories are already in ``config.out``.
    """
    console = console or Console()
    result = DemoResult()
    loop = asyncio.new_event_loop()
    main = loop.create_task(_run(config, console, result))
    try:
        return loop.run_until_complete(main)
    except KeyboardInterrupt:
        main.cancel()
        # the pools and workers close as the task unwinds; a blocking step running in a
        # thread (validation, synthesis) is not waited for
        loop.run_until_complete(asyncio.wait([main], timeout=1.0))
        raise InterruptedDemo(result) from None
    finally:
        loop.close()
