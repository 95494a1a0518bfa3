"""``awm bench list|run|report|compare``: external benchmarks registered as plugins."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from awm_core.contracts import Benchmark

DEFAULT_RESULTS = Path("bench-results")


def _suites() -> dict[str, Benchmark]:
    from awm_core.registry import BENCHMARKS, collect

    return collect(BENCHMARKS)


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(as_json: bool) -> None:
    """The benchmarks installed plugins offer, and whether each can run here."""
    rows: list[dict[str, Any]] = [
        {"name": n, "title": s.title, "modes": list(s.modes), "missing": s.available()}
        for n, s in sorted(_suites().items())
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        state = "ready" if row["missing"] is None else f"not installed: {row['missing']}"
        click.echo(f"{row['name']:<10} {row['title']:<14} modes={','.join(row['modes'])}  {state}")


def model_slug(model: str, corruption: str | None = None) -> str:
    """The folder of one model's results in a run: ``openai:gpt-4o`` -> ``openai-gpt-4o``."""
    slug = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in model)
    return f"{slug}-{corruption}" if corruption else slug


@click.command(name="run")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--model",
    default="oracle",
    show_default=True,
    help="'oracle' (the benchmark's ground truth) or a backend spec: openai:NAME, local:smollm2.",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["awm", "native", "both"]),
    help="native: the benchmark's own harness; awm: awm's episode loop (default: both).",
)
@click.option("--full", is_flag=True, help="Every case, not the offline subset.")
@click.option("--limit", type=int, default=None, help="Cases per category in the subset.")
@click.option("--run", "run_name", default=None, help="Run name (a killed run resumes under it).")
@click.option(
    "--results",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_RESULTS,
    show_default=True,
    help="Folder of runs.",
)
@click.option(
    "--only",
    default="",
    help="Comma-separated categories / domains / environments to keep (default: all).",
)
@click.option(
    "--user-model",
    default=None,
    help="Backend for τ²'s user simulator (default: τ²'s own, openai:gpt-4.1, "
    "when OPENAI_API_KEY is set).",
)
@click.option(
    "--handler",
    default=None,
    help="BFCLv3 native mode: bfcl-eval's own model handler, by leaderboard model name "
    "(Qwen/Qwen3-8B-FC, Qwen/Qwen3-8B) or handler class (QwenFCHandler); default: its "
    "generic OpenAI function-calling handler.",
)
@click.option(
    "--trials", type=int, default=1, show_default=True, help="Runs per task: pass^1..k (tau2)."
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=None,
    help="The agent's step limit (default: each benchmark's own: τ² 200, MCP-Universe 20).",
)
@click.option(
    "--tasks",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="A benchmark YAML or task folder to run instead of the offline set (mcpuniverse).",
)
@click.option(
    "--corrupt",
    type=click.Choice(["drop_argument", "rename_tool", "obey_injection"]),
    default=None,
    help="Break the oracle on purpose (its score must drop); obey_injection (AgentDojo): "
    "it also carries out the injected instructions it reads.",
)
@click.option(
    "--attack",
    default=None,
    help="AgentDojo's prompt-injection attack (default: important_instructions; "
    "none: utility only).",
)
@click.option(
    "--temperature",
    type=click.FloatRange(min=0),
    default=None,
    help="Sampling temperature (default: each benchmark's own).",
)
@click.option(
    "--top-p",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=None,
    help="Nucleus sampling top_p (default: each benchmark's own).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Completion token cap per request (default: each benchmark's own).",
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Sampling seed; trial N uses SEED+N (default: each benchmark's own).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
def run_command(
    names: tuple[str, ...],
    model: str,
    modes: tuple[str, ...],
    full: bool,
    limit: int | None,
    run_name: str | None,
    results: Path,
    only: str,
    user_model: str | None,
    handler: str | None,
    trials: int,
    max_steps: int | None,
    tasks: Path | None,
    corrupt: str | None,
    temperature: float | None,
    top_p: float | None,
    max_tokens: int | None,
    seed: int | None,
    attack: str | None,
    as_json: bool,
) -> None:
    """Run benchmarks NAMES (see `awm bench list`; `all`: every one installed) into
    RESULTS/RUN/NAME/, then write one report for the whole run.

    Every case's outcome is appended as it finishes and every model answer is
    cached, so running the same command with the same --run continues a killed
    run without asking the model again. Each benchmark decodes with its own
    default sampling; --temperature, --top-p, --max-tokens and --seed replace those
    parameters, and the summary and report record what was used.
    """
    from awm_bench.report import build_report
    from awm_core.console import progress_callback
    from awm_core.contracts import BenchmarkConfig, benchmark_sampling
    from awm_core.errors import UnknownSubsetError
    from awm_core.llm.sampling import Sampling

    suites = _suites()
    if "all" in names:
        names = tuple(sorted(suites))
    unknown = [n for n in names if n not in suites]
    if unknown:
        raise click.UsageError(f"unknown benchmark(s) {unknown}; installed: {sorted(suites)}")
    run_dir = results / (run_name or time.strftime("%Y%m%d-%H%M%S"))
    summaries = {}
    failed = False
    progress = progress_callback()
    try:
        for name in names:
            suite = suites[name]
            missing = suite.available()
            if missing:
                click.echo(f"{name}: {missing}", err=True)
                failed = True
                continue
            config = BenchmarkConfig(
                out=run_dir / name / model_slug(model, corrupt),
                model=model,
                modes=tuple(m for m in _modes(modes) if m in suite.modes),
                full=full,
                limit=limit,
                corruption=corrupt,
                max_steps=max_steps,
                only=tuple(x.strip() for x in only.split(",") if x.strip()),
                user_model=user_model,
                handler=handler,
                trials=trials,
                sampling=benchmark_sampling(suite, Sampling(temperature, top_p, max_tokens, seed)),
                tasks=tasks,
                progress=progress,
                attack=attack,
            )
            started = time.perf_counter()
            try:
                summary = suite.run(config)
            except UnknownSubsetError as exc:
                raise click.UsageError(f"{name}: {exc}") from exc
            summary["wall_s"] = round(time.perf_counter() - started, 2)
            summary["sampling"] = config.sampling.to_dict()
            summary["trials"] = trials
            (config.out / "summary.json").write_text(
                json.dumps(summary, indent=2), encoding="utf-8"
            )
            summaries[name] = summary
    except KeyboardInterrupt:
        click.echo(
            f"\ninterrupted: every finished case is kept in {run_dir}; continue with "
            f"the same command and --run {run_dir.name}",
            err=True,
        )
        sys.exit(130)
    finally:
        progress.close()
    build_report(run_dir)
    if as_json:
        click.echo(json.dumps(summaries, indent=2))
    else:
        for name, summary in summaries.items():
            for mode, data in summary.get("modes", {}).items():
                headline = _headline(data)
                shown = f"{100 * headline:.2f}%" if isinstance(headline, float) else headline
                if data.get("complete") is False:
                    shown = f"N/A (not every category; {data.get('correct')} correct)"
                click.echo(
                    f"{name} [{mode}] {summary['model']}: {shown}  ({data.get('cases')} cases)"
                )
            for line in summary.get("terminal", []):  # a benchmark's own detail lines
                click.echo(line)
        click.echo(f"report: {run_dir / 'report.html'}")
    if failed:
        sys.exit(1)


def _modes(chosen: tuple[str, ...]) -> tuple[str, ...]:
    """``--mode`` as modes: ``both`` (or none given) is every mode, awm then native."""
    from awm_core.contracts import BENCHMARK_MODES

    return BENCHMARK_MODES if not chosen or "both" in chosen else chosen


def _headline(mode_data: dict[str, Any]) -> Any:
    """A mode's one number: BFCL's overall accuracy, else the benchmark's headline."""
    return mode_data.get("groups", {}).get("overall", mode_data.get("headline"))


@click.command(name="report")
@click.argument("run_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print each benchmark's headline per model and mode as JSON.",
)
def report_command(run_dir: Path, as_json: bool) -> None:
    """(Re)write RUN_DIR/report.json and report.html from its benchmarks' summaries."""
    from awm_bench.report import build_report

    report = build_report(run_dir)
    if as_json:
        rows = [
            {
                "benchmark": bench,
                "model": summary.get("model"),
                "corruption": summary.get("corruption"),
                "mode": mode,
                "headline": _headline(data),
                "cases": data.get("cases"),
                "complete": data.get("complete", True),
            }
            for bench, summaries in report["benchmarks"].items()
            for summary in summaries
            for mode, data in summary.get("modes", {}).items()
        ]
        click.echo(json.dumps({"run": report["run"], "results": rows}, indent=2))
        return
    click.echo(str(run_dir / "report.html"))


@click.command(name="compare")
@click.argument(
    "run_dirs",
    nargs=-1,
    required=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the tables (and every shared score) as JSON."
)
@click.option(
    "--html",
    "html_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the tables as an HTML page (default: LAST_RUN/compare.html).",
)
def compare_command(run_dirs: tuple[Path, ...], as_json: bool, html_out: Path | None) -> None:
    """Compare runs (base vs. trained) laid out as the AWM paper's Tables 4 and 5.

    Each run is shown by its model: per benchmark and category or domain (Table 4
    layout), and by complexity bucket (Table 5 layout: BFCLv3 by required tool calls,
    τ²-bench by ground-truth actions), with the delta last minus first and the paper's
    reference rows. The same tables are written as an HTML page.
    """
    from awm_bench.compare import compare_runs, render_html, terminal_tables

    result = compare_runs(list(run_dirs))
    page = html_out or run_dirs[-1] / "compare.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_html(result), encoding="utf-8")
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    from rich.console import Console

    console = Console()
    for renderable in terminal_tables(result):
        console.print(renderable)
    click.echo(f"compare: {page}")


COMMANDS = (list_command, run_command, report_command, compare_command)
