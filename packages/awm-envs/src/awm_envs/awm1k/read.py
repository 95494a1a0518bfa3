"""Read the official AWM-1K release: JSONL files joined on the scenario name.

The release's files (``gen_scenario.jsonl``, ``gen_tasks.jsonl``, ...) name a
scenario (``name`` in ``gen_scenario.jsonl``, ``scenario`` elsewhere) in
differing line orders, with duplicate verifier rows; :func:`read_release`
joins them into one :class:`OfficialScenario` each, keeping the first usable
verifier row per task and file as it is (for the export) and noting duplicates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_core.errors import AWMError
from awm_envs.awm1k.verifier_code import OfficialVerifier, detect, unwrap_row

FILES = {
    "scenario": "gen_scenario.jsonl",
    "tasks": "gen_tasks.jsonl",
    "db": "gen_db.jsonl",
    "sample": "gen_sample.jsonl",
    "spec": "gen_spec.jsonl",
    "envs": "gen_envs.jsonl",
    "verifier_sql": "gen_verifier.jsonl",
    "verifier_code": "gen_verifier.pure_code.jsonl",
}


class ReleaseError(AWMError, ValueError):
    """The folder is not an AWM-1K release awm can read (its message is one line, for the CLI)."""


def normalize_scenario_name(name: str) -> str:
    """The release's own join key: lower case, non-alphanumerics to single underscores."""
    s = re.sub(r"[^a-z0-9_]", "_", name.lower())
    return re.sub(r"_+", "_", s).strip("_")


@dataclass
class ImportProblem:
    """Why one scenario (or one task of it) was skipped or repaired."""

    scenario: str
    stage: str
    message: str
    fatal: bool = True


@dataclass
class OfficialScenario:
    """Everything the release says about one scenario, joined from all files."""

    name: str
    description: str = ""
    tasks: list[str] = field(default_factory=list)
    awm_tasks: list[dict[str, Any]] | None = None  # present in files written by export_awm
    db_schema: dict[str, Any] | None = None
    sample: dict[str, Any] | None = None
    spec: dict[str, Any] | None = None
    full_code: str | None = None
    verifiers: dict[int, OfficialVerifier] = field(default_factory=dict)  # by task index
    # per task index and file kind ("verifier_code", "verifier_sql"): the first usable
    # row's `verification` object as the release has it (kept for the export)
    rows: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)
    notes: list[ImportProblem] = field(default_factory=list)  # duplicate rows, unwrapped rows
    duplicate_rows: int = 0


def _read_jsonl(path: Path, problems: list[ImportProblem]) -> Iterable[dict[str, Any]]:
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReleaseError(
            f"{path} is not a JSON-lines text file (byte {exc.start} is not UTF-8): "
            "an AWM-1K release holds gen_*.jsonl files of JSON objects, one per line"
        ) from None
    except OSError as exc:
        raise ReleaseError(f"{path} cannot be read: {exc.strerror or exc}") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(
                ImportProblem("*", path.name, f"line {lineno}: invalid JSON ({exc.msg})", False)
            )
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def read_release(folder: Path) -> tuple[dict[str, OfficialScenario], list[ImportProblem]]:
    """Join the release's JSONL files on the normalised scenario name."""
    problems: list[ImportProblem] = []
    if not (folder / FILES["scenario"]).is_file():
        raise FileNotFoundError(f"{folder} has no {FILES['scenario']}: not an AWM release folder")
    scenarios: dict[str, OfficialScenario] = {}
    scenario_rows = list(_read_jsonl(folder / FILES["scenario"], problems))
    for row in scenario_rows:
        name = normalize_scenario_name(str(row.get("name", "")))
        if name:
            scenarios[name] = OfficialScenario(
                name=name, description=str(row.get("description", ""))
            )
    if not scenarios:
        seen = f"{len(scenario_rows)} object rows" if scenario_rows else "no JSON object rows"
        keys = sorted({k for r in scenario_rows for k in r})[:8]
        raise ReleaseError(
            f"{folder / FILES['scenario']} names no scenario ({seen}"
            + (f", with keys {keys}" if keys else "")
            + "): each line must be a JSON object with a 'name' (and 'description')"
        )

    def rows(kind: str) -> Iterable[tuple[OfficialScenario, dict[str, Any]]]:
        for row in _read_jsonl(folder / FILES[kind], problems):
            name = normalize_scenario_name(str(row.get("scenario", "")))
            if name not in scenarios:
                problems.append(
                    ImportProblem(
                        name or "?",
                        FILES[kind],
                        "row names no scenario of gen_scenario.jsonl",
                        False,
                    )
                )
                continue
            yield scenarios[name], row

    for sc, row in rows("tasks"):
        sc.tasks = [str(t) for t in row.get("tasks", [])]
        if isinstance(row.get("awm_tasks"), list):
            sc.awm_tasks = row["awm_tasks"]
    for sc, row in rows("db"):
        sc.db_schema = row.get("db_schema")
    for sc, row in rows("sample"):
        sc.sample = row.get("sample_data")
    for sc, row in rows("spec"):
        sc.spec = row.get("api_spec")
    for sc, row in rows("envs"):
        sc.full_code = row.get("full_code")
    by_task: dict[tuple[str, int, str], list[dict[str, Any]]] = {}  # all rows per task, file
    for kind in ("verifier_code", "verifier_sql"):
        for sc, row in rows(kind):
            idx = _add_verifier_row(sc, kind, row, problems)
            if idx is not None:
                by_task.setdefault((sc.name, idx, kind), []).append(row)
    for (name, idx, kind), found in sorted(by_task.items()):
        if len(found) > 1:
            _note_duplicates(scenarios[name], idx, kind, found)
    return scenarios, problems


def _add_verifier_row(
    sc: OfficialScenario, kind: str, row: dict[str, Any], problems: list[ImportProblem]
) -> int | None:
    """Take one verifier row: the first usable row per task and file is kept for the
    export; the task's verifier is the first usable code-mode row, else sql-mode row.

    The mode comes from each row's function (name, then signature), not from the file:
    real pipeline output puts code-mode functions in gen_verifier.jsonl too. Code-mode
    verifiers decide on their own, so they win over sql-mode evidence extractors for the
    task's verifier. Returns the row's task index (None when it has none).
    """
    try:
        idx = int(row["task_idx"])
    except (KeyError, TypeError, ValueError):
        problems.append(
            ImportProblem(sc.name, FILES[kind], "verifier row without an integer task_idx", False)
        )
        return None
    verification = row.get("verification")
    if not isinstance(verification, dict):
        return idx
    code = str(verification.get("code") or "")
    plain = unwrap_row(code)
    if plain != code:
        sc.notes.append(
            ImportProblem(
                sc.name,
                "verifier",
                f"task {idx}: {FILES[kind]} row was wrapped by an older awm export; "
                "unwrapped to the official code inside",
                False,
            )
        )
        verification = {**verification, "code": plain}
    found = detect(plain)
    if found is None:
        return idx
    sc.rows.setdefault(idx, {}).setdefault(kind, verification)  # what the official code runs
    held = sc.verifiers.get(idx)
    if held is None or (held.mode == "sql" and found.mode == "code"):
        sc.verifiers[idx] = found
    return idx


def _note_duplicates(
    sc: OfficialScenario, idx: int, kind: str, found: list[dict[str, Any]]
) -> None:
    """A task with more than one row in one file is reported, never collapsed silently."""
    sc.duplicate_rows += len(found) - 1
    texts = {json.dumps(r.get("verification"), sort_keys=True) for r in found}
    same = "identical" if len(texts) == 1 else "differing"
    kept = "the first usable one is kept" if kind in sc.rows.get(idx, {}) else "none is usable"
    sc.notes.append(
        ImportProblem(
            sc.name,
            "verifier",
            f"task {idx}: {len(found)} rows in {FILES[kind]} ({same}); {kept}",
            False,
        )
    )
