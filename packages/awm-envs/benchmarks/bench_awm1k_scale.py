"""AWM-1K at release scale: generate a release, import it, validate it, and say where time goes.

    python packages/awm-envs/benchmarks/bench_awm1k_scale.py [--scenarios 1000] [--json]

Goal (issue 27): the 1,000 environments of the release imported and validated in
at most 60 minutes with at most 4 GiB peak memory on the 2-core reference machine.
The release is written by :mod:`awm1k_release` (catalog exports and their variants,
with the upstream defect mix); ``awm envs import-awm`` and ``awm envs validate
--journal`` then run on it as separate processes, exactly as a user runs them.

Printed: environments per minute (import, validate, and end to end), seconds per
phase (generation, import, validation), within validation the seconds spent in
each part (sandbox starts, loading app/schema/data, fresh instances, replays,
verifiers, the journal, the rest), the peak RSS of each command's whole process
tree (the command, its workers and sandboxes; RSS is summed, so pages shared
between processes count once per process: an upper bound), and what the figures
extrapolate to for 1,000 environments. Validation's parts are measured by running
the ``validate`` command in a child interpreter whose functions are wrapped with
timers (exclusive time: a part nested in another counts once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from awm1k_release import defect_counts, write_release  # noqa: E402

GOAL_MINUTES = 60.0
GOAL_PEAK_GIB = 4.0
RELEASE_SIZE = 1000


# -- memory of a process tree -------------------------------------------------------------


def _children_proc(pid: int) -> list[int]:
    """Every descendant of ``pid``, from /proc (when psutil is missing)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _rss_proc(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and all its descendants (summed RSS)."""
    try:
        import psutil
    except ImportError:
        return sum(_rss_proc(p) for p in [pid, *_children_proc(pid)])
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


class PeakSampler:
    """Samples :func:`tree_rss` of one process every ``interval`` seconds; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_measured(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``args``; its wall seconds, exit status and peak process-tree RSS."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    sampler = PeakSampler(proc.pid)
    out, err = proc.communicate()
    peak = sampler.stop()
    return {
        "seconds": time.perf_counter() - started,
        "rc": proc.returncode,
        "peak_rss_bytes": peak,
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace")[-2000:],
    }


# -- validation, profiled -------------------------------------------------------------------

#: (module, attribute, part): the functions whose time is counted per part.
PROFILED: list[tuple[str, str, str]] = [
    ("awm_envs.pool.preflight", "describe_bundle", "sandbox start: app import check"),
    ("awm_envs.sandbox.forkserver.ForkServer", "start", "sandbox start: verifier template"),
    ("awm_envs.sandbox.forkserver.ForkServer", "close", "sandbox start: verifier template"),
    # the runtime loads lazily: RuntimeEnvironment() reads env.tasks, which imports app.py
    # and builds the schema and seed data in this process
    ("awm_envs.runtime.environment", "load_environment", "load: app, schema, data"),
    ("awm_envs.validation.replay.RuntimeEnvironment", "__init__", "load: app, schema, data"),
    ("awm_envs.validation.replay.RuntimeEnvironment", "instance", "fresh instances"),
    ("awm_envs.validation.taskcheck", "replay_steps", "replay"),
    ("awm_envs.validation.runner.VerifierRunner", "__call__", "verifiers"),
    ("awm_envs.validation.journal.ValidationJournal", "record", "journal"),
    ("awm_envs.validation.journal.ValidationJournal", "lookup", "journal"),
]


def _resolve(dotted: str) -> Any:
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def install_timers(parts: dict[str, float]) -> None:
    """Wrap each :data:`PROFILED` function so ``parts[part]`` gains its exclusive seconds."""
    stack: list[float] = []  # per active timer: seconds its nested timers took

    def timed(fn: Callable[..., Any], part: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            stack.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - started
                nested = stack.pop()
                parts[part] = parts.get(part, 0.0) + spent - nested
                if stack:
                    stack[-1] += spent

        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper

    for owner, attr, part in PROFILED:
        target = _resolve(owner)
        setattr(target, attr, timed(getattr(target, attr), part))


def profiled_validate(report: Path, argv: list[str]) -> int:
    """Run ``awm envs validate ARGV`` in this process with timers; write them to ``report``."""
    from awm_envs.cli.validate import validate_command

    parts: dict[str, float] = {}
    install_timers(parts)
    started = time.perf_counter()
    code = 0
    try:
        validate_command.main(argv, standalone_mode=False)
    except SystemExit as exc:
        code = int(exc.code or 0)
    total = time.perf_counter() - started
    parts["rest"] = total - sum(parts.values())
    report.write_text(json.dumps({"seconds": total, "parts": parts, "rc": code}))
    return code


# -- the benchmark -------------------------------------------------------------------------


def _awm() -> list[str]:
    return [sys.executable, "-m", "awm_core.cli"]


def measure(
    work: Path, scenarios: int, seed: int, workers: int | None, envs: list[str] | None
) -> dict[str, Any]:
    """Generate, import and validate ``scenarios`` environments under ``work``."""
    release, bundles = work / "release", work / "bundles"
    env = {**os.environ, "AWM_CACHE_DIR": str(work / "cache")}
    load_at_start = os.getloadavg()  # other work on the machine skews every figure: say how much
    started = time.perf_counter()
    plans = write_release(release, scenarios, seed=seed, envs=envs)
    generation = time.perf_counter() - started

    imp_args = [*_awm(), "envs", "import-awm", str(release), "--out", str(bundles), "--json"]
    if workers:
        imp_args += ["--workers", str(workers)]
    imported = run_measured(imp_args, env)
    report = json.loads((bundles / "import-report.json").read_text())
    ok = [r["path"] for r in report["results"] if r["status"] != "failed"]

    profile = work / "validate-profile.json"
    val_args = [
        sys.executable,
        __file__,
        "--profiled-validate",
        str(profile),
        "--",
        *ok,
        "--json",
        "--journal",
        str(work / "validate.jsonl"),
    ]
    validated = run_measured(val_args, env)
    prof = json.loads(profile.read_text())
    results = json.loads(validated["stdout"]) if validated["stdout"].strip() else []
    proofs: dict[str, int] = {}
    for e in results:
        for t in e["tasks"]:
            proofs[t["proof"]] = proofs.get(t["proof"], 0) + 1
    total = generation + imported["seconds"] + validated["seconds"]
    # the goal counts import and validation (the real release is downloaded, not generated)
    per_env = (imported["seconds"] + validated["seconds"]) / scenarios
    return {
        "scenarios": scenarios,
        "seed": seed,
        "cpus": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "load_average_at_end": os.getloadavg(),
        "defects_injected": defect_counts(plans),
        "import_counts": report["counts"],
        "import_totals": report["totals"],
        "task_proofs": proofs,
        "seconds": {
            "generation": generation,
            "import": imported["seconds"],
            "validate": validated["seconds"],
            "total": total,
        },
        "validate_parts_seconds": dict(sorted(prof["parts"].items(), key=lambda kv: -kv[1])),
        "envs_per_minute": {
            "import": 60 * scenarios / imported["seconds"],
            "validate": 60 * len(ok) / validated["seconds"],
            "import_and_validate": 60 * scenarios / (imported["seconds"] + validated["seconds"]),
            "end_to_end": 60 * scenarios / total,
        },
        "peak_rss_mib": {
            "import": imported["peak_rss_bytes"] / 2**20,
            "validate": validated["peak_rss_bytes"] / 2**20,
        },
        "extrapolated_1000": {
            "import_and_validate_minutes": per_env * RELEASE_SIZE / 60,
            "goal_minutes": GOAL_MINUTES,
            "goal_peak_gib": GOAL_PEAK_GIB,
        },
        "rc": {"import": imported["rc"], "validate": validated["rc"]},
        "stderr_tail": {
            "import": imported["stderr"][-500:],
            "validate": validated["stderr"][-500:],
        },
    }


def table(r: dict[str, Any]) -> str:
    """The figures for a reader."""
    s, e, m, x = r["seconds"], r["envs_per_minute"], r["peak_rss_mib"], r["extrapolated_1000"]
    lines = [
        f"AWM-1K scale: {r['scenarios']} scenarios on {r['cpus']} CPUs "
        f"(load average {r['load_average_at_start'][0]:.1f} at start, "
        f"{r['load_average_at_end'][0]:.1f} at end)",
        f"  defects injected: {r['defects_injected']}",
        f"  import: {r['import_counts']}; tasks: {r['task_proofs']}",
        *(
            f"  {phase:<12} {s[phase]:8.1f} s"
            for phase in ("generation", "import", "validate", "total")
        ),
        "  validate, where the time goes:",
        *(
            f"    {part:<36} {sec:8.1f} s  {100 * sec / s['validate']:5.1f}%"
            for part, sec in r["validate_parts_seconds"].items()
        ),
        f"  environments per minute: import {e['import']:.1f}, validate {e['validate']:.1f}, "
        f"both {e['import_and_validate']:.1f}, with generation {e['end_to_end']:.1f}",
        f"  peak RSS (process tree): import {m['import']:.0f} MiB, validate {m['validate']:.0f} MiB"
        f" (goal <= {GOAL_PEAK_GIB:.0f} GiB)",
        f"  1,000 environments imported and validated at this rate: "
        f"{x['import_and_validate_minutes']:.0f} min (goal <= {GOAL_MINUTES:.0f})",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--profiled-validate"]:
        return profiled_validate(Path(argv[1]), argv[3:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, default=RELEASE_SIZE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="import workers (default: cores)")
    parser.add_argument("--env", action="append", help="catalog environments to vary (default all)")
    parser.add_argument("--work", type=Path, default=None, help="keep the files here")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="awm1k-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        result = measure(work, args.scenarios, args.seed, args.workers, args.env)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:  # the table to stderr, so stdout is the JSON alone
        print(table(result), file=sys.stderr)
        print(json.dumps(result, indent=2))
    else:
        print(table(result))
    return 0 if result["rc"]["import"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
