"""Import a whole AWM-1K release folder into bundle folders, resumably.

An environment or task that cannot be imported is reported with the reason and
skipped, never silently dropped. Each environment is written to a temporary
folder, loaded by the runtime in a worker process, and only then renamed into
place, so an interrupted import resumes where it stopped. Its result is recorded
before the rename, so a run killed at any point (SIGKILL of the whole process
group included) and rerun reports every scenario as an uninterrupted run does.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from awm_envs.awm1k.convert import DEFAULT_REFERENCE_TIME, ImportFailure, convert
from awm_envs.awm1k.read import (
    ImportProblem,
    OfficialScenario,
    normalize_scenario_name,
    read_release,
)

MARKER_DIR = ".awm-import"


@dataclass
class ImportResult:
    """One scenario's outcome: ``imported``, ``skipped`` (already done) or ``failed``."""

    scenario: str
    status: str
    path: str | None = None
    tools: int = 0
    tasks: int = 0
    problems: list[ImportProblem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # see convert.COUNT_KEYS


def _done_record(out: Path, name: str) -> Path:
    return out / MARKER_DIR / "done" / f"{name}.json"


def _import_one(sc: OfficialScenario, out: Path, reference: datetime) -> ImportResult:
    """Runs in a worker process: the untrusted app is imported there, not in the caller.

    The result is recorded (``.awm-import/done/NAME.json``) before the bundle folder is
    renamed into place, so a run killed at any point leaves every finished bundle with
    its full result, and a rerun reports it exactly as the first run would have.
    """
    from awm_envs.bundle.loader import load_bundle, unload_bundle
    from awm_envs.errors import BundleError

    final = out / sc.name
    # one temporary folder per process: a worker orphaned by a killed run cannot clobber
    # the rerun's folder for the same scenario
    tmp = out / MARKER_DIR / f"{sc.name}.{os.getpid()}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        files, notes, counts = convert(sc, reference)
    except ImportFailure as exc:
        return ImportResult(
            sc.name, "failed", problems=[ImportProblem(sc.name, exc.stage, exc.message)]
        )
    except Exception as exc:  # a malformed row must not stop the other scenarios
        return ImportResult(
            sc.name,
            "failed",
            problems=[ImportProblem(sc.name, "convert", f"{type(exc).__name__}: {exc}")],
        )
    tmp.mkdir(parents=True)
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    try:
        bundle = load_bundle(tmp)
    except BundleError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        problems = [ImportProblem(sc.name, p.file, f"{p.field}: {p.message}") for p in exc.problems]
        return ImportResult(sc.name, "failed", problems=problems + notes, counts=counts)
    result = ImportResult(
        sc.name, "imported", str(final), len(bundle.tools), len(bundle.tasks), notes, counts
    )
    unload_bundle(bundle)  # a worker imports hundreds of apps: keep none of them
    del bundle
    _write_atomic(_done_record(out, sc.name), json.dumps(asdict(result)))
    try:
        os.replace(tmp, final)  # atomic: a bundle folder is either complete or absent
    except OSError:
        if not (final / "manifest.json").is_file():
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # an orphaned worker of a killed run was first
    return result


def _write_atomic(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a kill mid-write leaves the old file)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _saved_result(out: Path, name: str) -> ImportResult:
    """A finished bundle's result as its run recorded it, reported ``skipped``.

    Records of awm versions before whole results were kept hold only the counts.
    """
    path = _done_record(out, name)
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        saved = {}
    if not isinstance(saved, dict):
        saved = {}
    if "scenario" not in saved:  # an older record: counts only
        return ImportResult(name, "skipped", str(out / name), counts=saved)
    return ImportResult(
        name,
        "skipped",
        str(out / name),
        tools=int(saved.get("tools", 0)),
        tasks=int(saved.get("tasks", 0)),
        problems=[ImportProblem(**p) for p in saved.get("problems", [])],
        counts=dict(saved.get("counts", {})),
    )


def _triage(
    scenarios: dict[str, OfficialScenario], out: Path, failed_dir: Path, retry_failed: bool
) -> tuple[list[ImportResult], list[OfficialScenario]]:
    """Results for scenarios already done (imported, or failed unless retried), and the rest to do."""
    results: list[ImportResult] = []
    todo: list[OfficialScenario] = []
    for name, sc in sorted(scenarios.items()):
        if (out / name / "manifest.json").is_file():
            results.append(_saved_result(out, name))
        elif (failed_dir / f"{name}.json").is_file() and not retry_failed:
            saved = json.loads((failed_dir / f"{name}.json").read_text())
            results.append(
                ImportResult(name, "failed", problems=[ImportProblem(**p) for p in saved])
            )
        else:
            todo.append(sc)
    return results, todo


def _import_all(
    todo: list[OfficialScenario],
    out: Path,
    reference_time: datetime,
    workers: int | None,
    record: Callable[[ImportResult], None],
) -> None:
    """Import each scenario in a worker process; ``record`` each result as it comes."""
    with ProcessPoolExecutor(max_workers=workers or min(len(todo), os.cpu_count() or 1)) as pool:
        futures = {pool.submit(_import_one, sc, out, reference_time): sc for sc in todo}
        for future in as_completed(futures):
            try:
                record(future.result())
            except Exception as exc:  # the worker died (e.g. the app called os._exit)
                sc = futures[future]
                record(
                    ImportResult(
                        sc.name,
                        "failed",
                        problems=[ImportProblem(sc.name, "worker", repr(exc))],
                    )
                )


def totals(results: list[ImportResult]) -> dict[str, int]:
    """The per-scenario counts summed over the scenarios that are available (not failed)."""
    out: dict[str, int] = {}
    for r in results:
        if r.status != "failed":
            for key, n in r.counts.items():
                out[key] = out.get(key, 0) + n
    return out


def import_awm(
    release: Path,
    out: Path,
    *,
    reference_time: datetime = DEFAULT_REFERENCE_TIME,
    workers: int | None = None,
    only: list[str] | None = None,
    retry_failed: bool = False,
    progress: Callable[[ImportResult], None] | None = None,
) -> tuple[list[ImportResult], list[ImportProblem]]:
    """Import a release folder into ``out``; resumable (finished bundles are kept).

    Returns one result per scenario plus release-level problems (bad lines,
    rows naming unknown scenarios). A report is written to
    ``out/import-report.json``.
    """
    scenarios, problems = read_release(release)
    if only:
        wanted = {normalize_scenario_name(n) for n in only}
        scenarios = {k: v for k, v in scenarios.items() if k in wanted}
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER_DIR).mkdir(exist_ok=True)
    failed_dir = out / MARKER_DIR / "failed"
    failed_dir.mkdir(exist_ok=True)
    done_dir = out / MARKER_DIR / "done"  # per-scenario results, for the report of a resumed run
    done_dir.mkdir(exist_ok=True)
    for stale in (out / MARKER_DIR).glob("*.partial"):  # left by a killed run
        shutil.rmtree(stale, ignore_errors=True)
    results, todo = _triage(scenarios, out, failed_dir, retry_failed)
    for r in results:
        if progress:
            progress(r)

    def record(result: ImportResult) -> None:
        if result.status == "failed":
            _write_atomic(
                failed_dir / f"{result.scenario}.json",
                json.dumps([asdict(p) for p in result.problems], indent=2),
            )
        else:  # the worker recorded the result in done/ before renaming the bundle
            (failed_dir / f"{result.scenario}.json").unlink(missing_ok=True)
        results.append(result)
        if progress:
            progress(result)

    if todo:
        _import_all(todo, out, reference_time, workers, record)
    results.sort(key=lambda r: r.scenario)
    report = {
        "release": str(release),
        "reference_time": reference_time.isoformat(),
        "counts": {
            s: sum(r.status == s for r in results) for s in ("imported", "skipped", "failed")
        },
        "totals": totals(results),
        "results": [asdict(r) for r in results],
        "release_problems": [asdict(p) for p in problems],
    }
    _write_atomic(out / "import-report.json", json.dumps(report, indent=2))
    return results, problems
