"""``awm synth report``: what a run did, what it cost, where its time went, how diverse it is."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table

from awm_synth.diversity.scores import diversity
from awm_synth.llm.tags import GLOBAL_SCENARIO
from awm_synth.stages import ENV_STAGES
from awm_synth.store.artifacts import ScenarioSelection
from awm_synth.store.checkpoint import RunDir


def build_report(run_dir: RunDir) -> dict[str, Any]:
    """Everything the report shows, as JSON-ready data (``--json`` prints exactly this)."""
    records = run_dir.stage_records()
    scenario_record = run_dir.load_stage(GLOBAL_SCENARIO, "scenario")
    stages: dict[str, dict[str, Any]] = {}
    for stage in ENV_STAGES:
        rs = [r for r in records if r.stage == stage]
        if not rs:
            continue
        causes: Counter[str] = Counter(c for r in rs for a in r.attempts for c in a.causes)
        stages[stage] = {
            "environments": len(rs),
            "first_attempt_success": round(
                sum(1 for r in rs if r.accepted and len(r.attempts) == 1) / len(rs), 4
            ),
            "accepted": sum(1 for r in rs if r.accepted),
            "mean_correction_iterations": round(sum(len(r.attempts) - 1 for r in rs) / len(rs), 4),
            "failures_by_cause": dict(causes.most_common()),
        }
    envs: dict[str, dict[str, Any]] = defaultdict(
        lambda: {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "requests": 0,
            "cached_requests": 0,
            "wall_s": 0.0,
            "llm_wait_s": 0.0,
            "own_work_s": 0.0,
            "attempts": {},
        }
    )
    corrections: list[dict[str, Any]] = []
    for r in records:
        e = envs[r.scenario]
        e["prompt_tokens"] += r.stats.prompt_tokens
        e["completion_tokens"] += r.stats.completion_tokens
        e["cost_usd"] = round(e["cost_usd"] + r.stats.cost_usd, 6)
        e["requests"] += len(r.stats.calls)
        e["cached_requests"] += sum(1 for c in r.stats.calls if c.cached)
        e["wall_s"] = round(e["wall_s"] + r.stats.wall_s, 4)
        e["llm_wait_s"] = round(e["llm_wait_s"] + r.stats.llm_wait_s, 4)
        e["own_work_s"] = round(e["own_work_s"] + r.stats.own_work_s, 4)
        e["attempts"][r.stage] = len(r.attempts)
        if len(r.attempts) > 1 or any(a.failed for a in r.attempts):
            corrections.append(
                {
                    "scenario": r.scenario,
                    "stage": r.stage,
                    "attempts": [
                        {
                            "number": a.number,
                            "failed": a.failed,
                            "total": a.total,
                            "causes": sorted(set(a.causes)),
                        }
                        for a in r.attempts
                    ],
                    "kept_attempt": r.chosen_attempt,
                    "accepted": r.accepted,
                }
            )
    for name in run_dir.scenario_names():
        status = run_dir.load_status(name)
        if status is not None:
            envs[name]["status"] = status.status
            envs[name]["tasks"] = status.tasks
            envs[name]["tools"] = status.tools
            if status.status == "failed":
                envs[name]["failed_stage"] = status.failed_stage
                envs[name]["reason"] = status.reason
    total_wait = sum(e["llm_wait_s"] for e in envs.values())
    total_own = sum(e["own_work_s"] for e in envs.values())
    scenario_info: dict[str, Any] = {}
    texts: dict[str, str] = {}
    if scenario_record is not None and scenario_record.artifact is not None:
        sel = ScenarioSelection.model_validate(scenario_record.artifact)
        scenario_info = {
            "kept": len(sel.scenarios),
            "requested": sel.requested,
            "rejected_unsuitable": [v.name for v in sel.rejected],
            "duplicates": sel.duplicates,
            "capped": sel.capped,
            "embedder": sel.embedder,
            "prompt_tokens": scenario_record.stats.prompt_tokens,
            "completion_tokens": scenario_record.stats.completion_tokens,
            "cost_usd": round(scenario_record.stats.cost_usd, 6),
        }
        texts = {s.name: f"{s.name.replace('_', ' ')}: {s.description}" for s in sel.scenarios}
    bundles = (
        {
            p.name: p
            for p in run_dir.bundles_dir.iterdir()
            if p.is_dir() and not p.name.startswith(".")
        }
        if run_dir.bundles_dir.is_dir()
        else {}
    )
    config = run_dir.load_config()
    return {
        "run_dir": str(run_dir.root),
        "backend": config.backend if config else None,
        "environments_total": len(envs),
        "environments_shipped": sum(1 for e in envs.values() if e.get("status") == "shipped"),
        "scenario_stage": scenario_info,
        "stages": stages,
        "self_corrections": corrections,
        "environments": dict(sorted(envs.items())),
        "totals": {
            "prompt_tokens": sum(e["prompt_tokens"] for e in envs.values())
            + scenario_info.get("prompt_tokens", 0),
            "completion_tokens": sum(e["completion_tokens"] for e in envs.values())
            + scenario_info.get("completion_tokens", 0),
            "cost_usd": round(
                sum(e["cost_usd"] for e in envs.values()) + scenario_info.get("cost_usd", 0.0), 6
            ),
            "llm_wait_s": round(total_wait, 3),
            "own_work_s": round(total_own, 3),
            "llm_wait_share": round(total_wait / (total_wait + total_own), 4)
            if total_wait + total_own
            else 0.0,
        },
        "diversity": diversity(
            bundles,
            texts,
            embedder=scenario_info.get("embedder", "lexical")
            if scenario_info.get("embedder") in ("lexical-tfidf",)
            else "auto",
        ),
    }


def render_report(report: dict[str, Any], console: Console) -> None:
    """The human-readable report: tables for stages, corrections and environments."""
    console.print(
        f"[bold]{report['environments_shipped']} of {report['environments_total']} environments shipped[/] "
        f"({report['run_dir']}, backend {report['backend']})"
    )
    sc = report["scenario_stage"]
    if sc:
        dupes = ", ".join(
            f"{d['name']} ~ {d['duplicate_of']} ({d['similarity']})" for d in sc["duplicates"]
        )
        console.print(
            f"scenarios: {sc['kept']} kept of {sc['requested']} requested; rejected as unsuitable: "
            f"{', '.join(sc['rejected_unsuitable']) or 'none'}; duplicates: "
            f"{dupes or 'none'} "
            f"[{sc['embedder']}]"
        )
    table = Table(title="stages")
    for col in ("stage", "envs", "first-attempt success", "mean corrections", "failures by cause"):
        table.add_column(col)
    for stage, s in report["stages"].items():
        causes = ", ".join(f"{k}×{v}" for k, v in s["failures_by_cause"].items())
        table.add_row(
            stage,
            str(s["environments"]),
            f"{s['first_attempt_success']:.0%}",
            f"{s['mean_correction_iterations']:.2f}",
            causes,
        )
    console.print(table)
    table = Table(title="self-correction paths taken")
    for col in ("environment", "stage", "attempts (failed/total: causes)", "kept", "ok"):
        table.add_column(col)
    for c in report["self_corrections"]:
        path = " → ".join(
            f"{a['failed']}/{a['total']}" + (f" {','.join(a['causes'])}" if a["causes"] else "")
            for a in c["attempts"]
        )
        table.add_row(
            c["scenario"],
            c["stage"],
            path,
            str(c["kept_attempt"]),
            "yes" if c["accepted"] else "no",
        )
    console.print(table)
    table = Table(title="environments")
    for col in (
        "environment",
        "status",
        "tasks",
        "tools",
        "requests",
        "tokens in/out",
        "cost $",
        "LLM wait s",
        "own work s",
    ):
        table.add_column(col)
    for name, e in report["environments"].items():
        table.add_row(
            name,
            e.get("status", "in progress"),
            str(e.get("tasks", "")),
            str(e.get("tools", "")),
            f"{e['requests']} ({e['cached_requests']} cached)",
            f"{e['prompt_tokens']}/{e['completion_tokens']}",
            f"{e['cost_usd']:.4f}",
            f"{e['llm_wait_s']:.2f}",
            f"{e['own_work_s']:.2f}",
        )
    console.print(table)
    t = report["totals"]
    console.print(
        f"totals: {t['prompt_tokens']} prompt + {t['completion_tokens']} completion tokens, ${t['cost_usd']:.4f}; "
        f"time waiting for the LLM {t['llm_wait_s']}s vs own work {t['own_work_s']}s ({t['llm_wait_share']:.0%} waiting)"
    )
    d = report["diversity"]
    console.print(
        f"diversity: scenario cosine mean {d['scenario_similarity']['mean']} max {d['scenario_similarity']['max']}; "
        f"{d['duplicate_functions']} of {d['functions']} functions duplicated across environments; "
        f"tool-name Jaccard mean {d['tool_name_jaccard']['mean']}, class-name Jaccard mean {d['class_name_jaccard']['mean']}"
    )
