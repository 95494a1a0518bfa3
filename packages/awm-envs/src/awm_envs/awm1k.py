"""Convert the official AWM-1K release layout to awm bundles, and back.

The release is a set of JSONL files joined on the scenario name (``name`` in
``gen_scenario.jsonl``, ``scenario`` elsewhere), in differing line orders, with
duplicate verifier rows. Its known defects are repaired on the way in:

* backslash-escaped quotes in INSERT statements (``\\'`` is not SQL);
* ``datetime('now', ...)`` and ``CURRENT_TIMESTAMP`` frozen to a fixed reference time;
* tool code built around a module-level ``create_engine(...)``, ``SessionLocal()``
  inside each endpoint and ``uvicorn.run`` at the bottom (see :mod:`awm_envs.awm1k_compat`);
* both verifier modes (``verify_task`` evidence, ``verify_task_completion`` decisions).

An environment or task that cannot be imported is reported with the reason and
skipped, never silently dropped. Each environment is written to a temporary
folder, loaded by the runtime in a worker process, and only then renamed into
place, so an interrupted import resumes where it stopped.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from awm_core.astparse import parse as parse_source
from awm_core.models import Complexity, CreatedWith, EnvironmentManifest, Task
from awm_envs import __version__
from awm_envs.sqlscript import split_statements
from awm_envs.timefreeze import freeze_now

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
DEFAULT_REFERENCE_TIME = datetime(2025, 6, 1, 12, 0, 0)
MAX_FAILED_INSERT_RATIO = 0.10  # the paper tolerates up to 10% failing inserts
MARKER_DIR = ".awm-import"


# ----------------------------------------------------------------------------- reading


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
    verifiers: dict[int, tuple[str, str]] = field(default_factory=dict)  # idx -> (mode, code)


def _read_jsonl(path: Path, problems: list[ImportProblem]) -> Iterable[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def _defines(code: str, function: str) -> bool:
    try:
        tree = parse_source(code)
    except SyntaxError:
        return False
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body)


def read_release(folder: Path) -> tuple[dict[str, OfficialScenario], list[ImportProblem]]:
    """Join the release's JSONL files on the normalised scenario name."""
    problems: list[ImportProblem] = []
    if not (folder / FILES["scenario"]).is_file():
        raise FileNotFoundError(f"{folder} has no {FILES['scenario']}: not an AWM release folder")
    scenarios: dict[str, OfficialScenario] = {}
    for row in _read_jsonl(folder / FILES["scenario"], problems):
        name = normalize_scenario_name(str(row.get("name", "")))
        if name:
            scenarios[name] = OfficialScenario(
                name=name, description=str(row.get("description", ""))
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
    # Code-mode verifiers decide on their own, so they win over sql-mode evidence
    # extractors; among duplicate rows the first that defines its function wins.
    for kind, mode, function in (
        ("verifier_code", "code", "verify_task_completion"),
        ("verifier_sql", "sql", "verify_task"),
    ):
        for sc, row in rows(kind):
            try:
                idx = int(row["task_idx"])
            except (KeyError, TypeError, ValueError):
                problems.append(
                    ImportProblem(
                        sc.name, FILES[kind], "verifier row without an integer task_idx", False
                    )
                )
                continue
            code = (row.get("verification") or {}).get("code", "")
            if idx in sc.verifiers:
                continue
            if _defines(code, function):
                sc.verifiers[idx] = (mode, code)
    return scenarios, problems


# ----------------------------------------------------------------------------- repairs


def fix_escaped_quotes(sql: str) -> str:
    """``\\'`` inside an SQL literal is the LLM's habit, not SQL: double the quote instead."""
    return sql.replace("\\'", "''").replace('\\"', '"')


def _replace_calls(code: str, name: str, replacement: Callable[[str], str]) -> str:
    """Replace each ``name(...)`` call (parentheses balanced, strings respected)."""
    out, pos = [], 0
    pattern = re.compile(rf"\b{re.escape(name)}\(")
    while (m := pattern.search(code, pos)) is not None:
        depth, i, quote = 0, m.end() - 1, ""
        while i < len(code):
            ch = code[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append(code[pos : m.start()])
        out.append(replacement(code[m.start() : i + 1]))
        pos = i + 1
    out.append(code[pos:])
    return "".join(out)


SHIM = """

# --- added by `awm envs import-awm`: sessions are bound to the calling awm instance ---
from awm_envs.awm1k_compat import install_session_shim as _awm_install_session_shim  # noqa: E402

get_db, SessionLocal = _awm_install_session_shim(
    app, globals().get("SessionLocal"), globals().get("get_db")
)
"""


def rewrite_app(code: str) -> str:
    """Make official tool code importable as a bundle's app.py.

    The engine is pointed at a private in-memory database (nothing touches the
    file system at import), ``uvicorn.run`` calls are removed, and the session
    shim is appended.
    """
    code = _replace_calls(
        code,
        "create_engine",
        lambda _: 'create_engine("sqlite://", connect_args={"check_same_thread": False})',
    )
    code = _replace_calls(code, "uvicorn.run", lambda _: "None")
    return code.rstrip() + "\n" + SHIM


# ----------------------------------------------------------------------------- converting


class ImportFailure(Exception):
    """One scenario cannot become a bundle; ``stage`` says which part failed."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.message = message


def _schema_sql(sc: OfficialScenario, reference: datetime) -> str:
    tables = (sc.db_schema or {}).get("tables")
    if not tables:
        raise ImportFailure("db", "no tables in gen_db.jsonl")
    parts = []
    for table in tables:
        ddl = str(table.get("ddl", "")).strip().rstrip(";")
        if not ddl:
            raise ImportFailure("db", f"table {table.get('name')!r} has no DDL")
        parts.append(freeze_now(ddl, reference).sql + ";")
        for index in table.get("indexes") or []:
            parts.append(str(index).strip().rstrip(";") + ";")
    return "\n\n".join(parts) + "\n"


def _seed_sql(
    sc: OfficialScenario, schema_sql: str, reference: datetime
) -> tuple[str, list[ImportProblem]]:
    """Repair the inserts and keep those that execute; fail past the 10% tolerance."""
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    for stmt in split_statements(schema_sql):
        try:
            conn.execute(stmt.sql)
        except sqlite3.Error as exc:
            raise ImportFailure("db", f"DDL statement {stmt.index} fails: {exc}") from None
    kept: list[str] = []
    notes: list[ImportProblem] = []
    total = 0
    for table in (sc.sample or {}).get("tables", []):
        for raw in table.get("insert_statements") or []:
            total += 1
            stmt = freeze_now(fix_escaped_quotes(str(raw).strip().rstrip(";")), reference).sql + ";"
            try:
                conn.execute(stmt)
            except sqlite3.Error as exc:
                notes.append(
                    ImportProblem(
                        sc.name,
                        "sample",
                        f"dropped insert into {table.get('table_name')}: {exc}",
                        False,
                    )
                )
                continue
            kept.append(stmt)
    conn.close()
    if total == 0:
        raise ImportFailure("sample", "no insert statements in gen_sample.jsonl")
    if (total - len(kept)) / total > MAX_FAILED_INSERT_RATIO:
        raise ImportFailure(
            "sample",
            f"{total - len(kept)} of {total} inserts fail (more than {MAX_FAILED_INSERT_RATIO:.0%})",
        )
    return "\n".join(kept) + "\n", notes


def _verifiers_py(sc: OfficialScenario, task_count: int) -> tuple[str, dict[int, str]]:
    lines = [
        '"""Verifiers imported from the official AWM release, adapted to the native signature."""',
        "",
        "from awm_envs.awm1k_compat import run_official_verifier",
        "",
    ]
    names: dict[int, str] = {}
    for idx in sorted(sc.verifiers):
        if idx >= task_count:
            continue
        mode, code = sc.verifiers[idx]
        name = f"verify_task_{idx}"
        names[idx] = name
        lines += [
            f"_SOURCE_{idx} = {code!r}",
            "",
            "",
            f"def {name}(initial, final, final_answer=None):",
            f"    return run_official_verifier(_SOURCE_{idx}, {mode!r}, initial, final, final_answer)",
            "",
        ]
    return "\n".join(lines) + "\n", names


def convert(
    sc: OfficialScenario, reference: datetime
) -> tuple[dict[str, str], list[ImportProblem]]:
    """The bundle files for one scenario, and notes about what was repaired or skipped."""
    if not sc.full_code:
        raise ImportFailure("envs", "no tool code (full_code) in gen_envs.jsonl")
    if not sc.tasks and not sc.awm_tasks:
        raise ImportFailure("tasks", "no tasks in gen_tasks.jsonl")
    schema_sql = _schema_sql(sc, reference)
    seed_sql, notes = _seed_sql(sc, schema_sql, reference)
    verifiers_py, verifier_names = _verifiers_py(sc, len(sc.awm_tasks or sc.tasks))
    tasks: list[Task] = []
    if sc.awm_tasks is not None:  # written by export_awm: full fidelity
        for raw in sc.awm_tasks:
            tasks.append(Task.model_validate(raw))
        by_index = {i: t for i, t in enumerate(tasks)}
        for idx, name in verifier_names.items():
            by_index[idx].verifier = name
    else:
        for idx, text in enumerate(sc.tasks):
            if not text.strip():
                notes.append(
                    ImportProblem(sc.name, "tasks", f"task {idx} is empty; skipped", False)
                )
                continue
            if idx not in verifier_names:
                notes.append(
                    ImportProblem(sc.name, "verifier", f"task {idx} has no usable verifier", False)
                )
            tasks.append(
                Task(
                    id=f"task_{idx}",
                    instruction=text.strip(),
                    # the release does not label complexity; the bucket is a placeholder
                    complexity=Complexity.MEDIUM,
                    verifier=verifier_names.get(idx),
                    tags=["awm1k", "complexity-unlabelled"],
                )
            )
    category = re.sub(r"_\d+$", "", sc.name) or sc.name
    manifest = EnvironmentManifest(
        id=sc.name,
        name=sc.name.replace("_", " ").title(),
        description=sc.description or sc.name,
        category=category,
        created_with=CreatedWith(tool="awm-import", version=__version__),
        reference_time=reference,
    )
    files = {
        "manifest.json": manifest.model_dump_json(indent=2) + "\n",
        "schema.sql": schema_sql,
        "seed.sql": seed_sql,
        "app.py": rewrite_app(sc.full_code),
        "tasks.json": json.dumps(
            [t.model_dump(mode="json", exclude_defaults=True) for t in tasks], indent=2
        )
        + "\n",
        "verifiers.py": verifiers_py,
    }
    return files, notes


# ----------------------------------------------------------------------------- importing


@dataclass
class ImportResult:
    """One scenario's outcome: ``imported``, ``skipped`` (already done) or ``failed``."""

    scenario: str
    status: str
    path: str | None = None
    tools: int = 0
    tasks: int = 0
    problems: list[ImportProblem] = field(default_factory=list)


def _import_one(sc: OfficialScenario, out: Path, reference: datetime) -> ImportResult:
    """Runs in a worker process: the untrusted app is imported there, not in the caller."""
    from awm_envs.bundle import load_bundle
    from awm_envs.errors import BundleError

    final = out / sc.name
    tmp = out / MARKER_DIR / f"{sc.name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        files, notes = convert(sc, reference)
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
        return ImportResult(sc.name, "failed", problems=problems + notes)
    os.replace(tmp, final)  # atomic: a bundle folder is either complete or absent
    return ImportResult(
        sc.name, "imported", str(final), len(bundle.tools), len(bundle.tasks), notes
    )


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
    results: list[ImportResult] = []
    todo: list[OfficialScenario] = []
    for name, sc in sorted(scenarios.items()):
        if (out / name / "manifest.json").is_file():
            results.append(ImportResult(name, "skipped", str(out / name)))
        elif (failed_dir / f"{name}.json").is_file() and not retry_failed:
            saved = json.loads((failed_dir / f"{name}.json").read_text())
            results.append(
                ImportResult(name, "failed", problems=[ImportProblem(**p) for p in saved])
            )
        else:
            todo.append(sc)
    for r in results:
        if progress:
            progress(r)

    def record(result: ImportResult) -> None:
        if result.status == "failed":
            (failed_dir / f"{result.scenario}.json").write_text(
                json.dumps([asdict(p) for p in result.problems], indent=2)
            )
        else:
            (failed_dir / f"{result.scenario}.json").unlink(missing_ok=True)
        results.append(result)
        if progress:
            progress(result)

    if todo:
        with ProcessPoolExecutor(
            max_workers=workers or min(len(todo), os.cpu_count() or 1)
        ) as pool:
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
    results.sort(key=lambda r: r.scenario)
    report = {
        "release": str(release),
        "reference_time": reference_time.isoformat(),
        "counts": {
            s: sum(r.status == s for r in results) for s in ("imported", "skipped", "failed")
        },
        "results": [asdict(r) for r in results],
        "release_problems": [asdict(p) for p in problems],
    }
    (out / "import-report.json").write_text(json.dumps(report, indent=2))
    return results, problems


# ----------------------------------------------------------------------------- exporting


_CREATE_TABLE = re.compile(
    r'^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["`\[]?(\w+)', re.IGNORECASE
)
_CREATE_INDEX = re.compile(
    r"^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\b.*?\bON\s+[\"`\[]?(\w+)", re.IGNORECASE | re.DOTALL
)
_INSERT = re.compile(r'^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+["`\[]?(\w+)', re.IGNORECASE)

_EXPORT_WRAPPER = '''

def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    """Exported by awm: the native verifier {name!r} behind the official signature."""
    import sqlite3

    initial = sqlite3.connect(f"file:{{initial_db_path}}?mode=ro", uri=True)
    final = sqlite3.connect(f"file:{{final_db_path}}?mode=ro", uri=True)
    try:
        out = {name}(initial, final, final_answer)
    finally:
        initial.close()
        final.close()
    return {{"result": "complete" if out.get("complete") else "others", "evidence": out.get("evidence")}}
'''


def export_awm(bundle_paths: list[Path], out: Path) -> dict[str, int]:
    """Write bundles in the official release layout (one line per scenario per file).

    Full task objects ride along in ``gen_tasks.jsonl`` (``awm_tasks``) so that a
    re-import keeps reference solutions; official readers ignore the extra key.
    """
    from awm_envs.bundle import load_bundle

    out.mkdir(parents=True, exist_ok=True)
    lines: dict[str, list[dict[str, Any]]] = {k: [] for k in FILES}
    for path in bundle_paths:
        bundle = load_bundle(path)
        name = bundle.manifest.id
        lines["scenario"].append({"name": name, "description": bundle.manifest.description})
        lines["tasks"].append(
            {
                "scenario": name,
                "tasks": [t.instruction for t in bundle.tasks],
                "awm_tasks": [
                    t.model_dump(mode="json", exclude={"verifier"}) for t in bundle.tasks
                ],
            }
        )
        tables: dict[str, dict[str, Any]] = {}
        for stmt in split_statements((bundle.path / "schema.sql").read_text()):
            if m := _CREATE_TABLE.match(stmt.sql):
                tables[m.group(1)] = {"name": m.group(1), "ddl": stmt.sql, "indexes": []}
            elif (m := _CREATE_INDEX.match(stmt.sql)) and m.group(1) in tables:
                tables[m.group(1)]["indexes"].append(stmt.sql)
        lines["db"].append(
            {
                "scenario": name,
                "db_path": f"{name}.db",
                "db_schema": {"tables": list(tables.values())},
            }
        )
        inserts: dict[str, list[str]] = {}
        for stmt in split_statements((bundle.path / "seed.sql").read_text()):
            table = m.group(1) if (m := _INSERT.match(stmt.sql)) else "_other"
            inserts.setdefault(table, []).append(stmt.sql)
        lines["sample"].append(
            {
                "scenario": name,
                "tables_count": len(inserts),
                "inserts_count": sum(len(v) for v in inserts.values()),
                "sample_data": {
                    "tables": [
                        {"table_name": t, "reasoning": "", "insert_statements": s}
                        for t, s in inserts.items()
                    ]
                },
            }
        )
        endpoints = []
        for tool in bundle.tools:
            props = tool.input_schema.get("properties", {})
            required = set(tool.input_schema.get("required", []))
            endpoints.append(
                {
                    "path": tool.path or f"/{tool.name}",
                    "method": (tool.method or "POST").upper(),
                    "summary": tool.description.split("\n")[0],
                    "description": tool.description,
                    "operation_id": tool.name,
                    "tags": tool.tags,
                    "request_params": {
                        p: {
                            "type": s.get("type", "string"),
                            "param_type": "query"
                            if (tool.method or "").upper() == "GET"
                            else "body",
                            "required": p in required,
                            "description": s.get("description", ""),
                            "example": s.get("example"),
                        }
                        for p, s in props.items()
                    },
                    "response": tool.output_schema or {},
                    "required_tables": [],
                    "required_fields": [],
                }
            )
        lines["spec"].append(
            {
                "scenario": name,
                "api_spec": {"api_groups": [{"group_name": name, "endpoints": endpoints}]},
            }
        )
        lines["envs"].append(
            {
                "scenario": name,
                "db_path": f"{name}.db",
                "full_code": (bundle.path / "app.py").read_text(),
            }
        )
        verifiers_src = (
            (bundle.path / "verifiers.py").read_text()
            if (bundle.path / "verifiers.py").is_file()
            else ""
        )
        for idx, task in enumerate(bundle.tasks):
            if task.verifier:
                code = verifiers_src + _EXPORT_WRAPPER.format(name=task.verifier)
                lines["verifier_code"].append(
                    {
                        "scenario": name,
                        "task_idx": idx,
                        "task": task.instruction,
                        "verification": {"code": code},
                    }
                )
    for kind, rows in lines.items():
        if rows:
            with open(out / FILES[kind], "w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row) + "\n")
    return {FILES[k]: len(v) for k, v in lines.items() if v}
