"""Write an AWM-1K-sized release in the official layout, with the upstream defect mix.

    python packages/awm-envs/benchmarks/awm1k_release.py OUT [--scenarios 1000] [--seed 0]

The real release (``Snowflake/AgentWorldModel-1K``) cannot be downloaded here and
is too big for a test, yet import and validation must be measured and proven
resumable at its size. This module builds a stand-in from the catalog: each
catalog environment is exported (``export_awm``, without ``awm_tasks``, so the
files look like the official release: no reference solutions) and scenario *i*
is a deterministic variant of catalog environment ``i % len(catalog)``:

* renamed: ``<env>_<i>`` (the release's ``<category>_<n>`` names) with a
  description naming the variant;
* tasks shuffled (and their verifier rows renumbered with them) and reworded
  (one of a few request phrasings put before the instruction);
* data rows varied: the insert statements of each table that does not refer to
  itself are rotated (same rows, another order), so no two variants have the
  same seed text;
* a share of tasks keeps only its sql-mode verifier row (as in the release,
  where many tasks have no code-mode row): those tasks need a judge.

Defects of the official generator are injected at the rates of :data:`DEFECT_RATES`
(each scenario draws each defect independently; scenario 0 of each catalog
environment, the plain export, gets none):

=================  ===========================================================
``broken_quotes``   one ``''`` inside a text value of an insert written ``\\'``
                    (MySQL style; SQLite rejects it)
``unbalanced_ddl``  the closing ``)`` of one ``CREATE TABLE`` removed
``pre_solved``      one task's code-mode verifier says complete on any database
                    (what validation sees of a task the seed data already solves)
``missing_verifier`` both verifier rows of one task removed
``now_in_data``     one date value of an insert replaced by ``datetime('now')``
``now_in_verifier`` one task's code-mode verifier reads ``datetime('now')``
=================  ===========================================================

What was injected where is written to ``OUT/awm1k-release.json`` (not a release
file; import ignores it), so a test or the benchmark can check that import and
validation find every injected defect. The same seed gives byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Share of scenarios that get each defect (independent draws). The official
#: release's own shares are not published; these are high enough that a 50-scenario
#: run meets every kind, low enough that most scenarios import clean.
DEFECT_RATES: dict[str, float] = {
    "broken_quotes": 0.10,
    "unbalanced_ddl": 0.05,
    "pre_solved": 0.05,
    "missing_verifier": 0.05,
    "now_in_data": 0.05,
    "now_in_verifier": 0.05,
}
#: Share of tasks of a variant that keep only their sql-mode verifier row.
SQL_ONLY_RATE = 0.25
MANIFEST = "awm1k-release.json"

_PHRASINGS = ("", "Hi! ", "Quick request: ", "Could you help? ", "Please: ")
_QUOTE_IN_WORD = re.compile(r"(?<=[A-Za-z])''(?=[A-Za-z])")
_DATE_LITERAL = re.compile(r"'(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}Z?)'")
_PRE_SOLVED_CODE = '''def verify_task_completion(initial_db_path, final_db_path, final_answer=None):
    """Accepts any database: the task is complete before the agent does anything."""
    return {"result": "complete", "evidence": "no check"}
'''
_CLOCK_READ = (
    "    _now = sqlite3.connect(final_db_path).execute(\"SELECT datetime('now')\").fetchone()[0]\n"
)


@dataclass
class Injected:
    """One injected defect: its kind and where (task index in the written release, table)."""

    kind: str
    task_idx: int | None = None
    table: str | None = None


@dataclass
class ScenarioPlan:
    """What one written scenario is: its source catalog environment and its defects."""

    name: str
    source: str
    defects: list[Injected] = field(default_factory=list)
    tasks: int = 0
    sql_only_tasks: list[int] = field(default_factory=list)


def catalog_rows(envs: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Each catalog environment's official-layout rows, by file: ``{env: {file: [row, ...]}}``.

    Exported once per run with :func:`awm_envs.awm1k.export.export_awm`; ``awm_tasks``
    (awm's reference solutions) is dropped, as the real release has none.
    """
    from awm_envs.awm1k.export import export_awm
    from awm_envs.awm1k.read import FILES
    from awm_envs.validation.validate import catalog_env_ids, resolve_env_dir

    ids = list(envs or catalog_env_ids())
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="awm1k-catalog-") as tmp:
        for env in ids:
            folder = Path(tmp) / env
            export_awm([resolve_env_dir(env)], folder)
            files: dict[str, Any] = {}
            for name in FILES.values():
                rows = [json.loads(line) for line in (folder / name).read_text().splitlines()]
                for row in rows:
                    row.pop("awm_tasks", None)
                files[name] = rows
            out[env] = files
    return out


def _rotate_inserts(tables: list[dict[str, Any]], ddl: dict[str, str], rng: random.Random) -> None:
    for table in tables:
        name = str(table.get("table_name"))
        rows = table.get("insert_statements") or []
        if len(rows) < 2 or re.search(
            rf"REFERENCES\s+{re.escape(name)}\b", ddl.get(name, ""), re.I
        ):
            continue
        k = rng.randrange(len(rows))
        table["insert_statements"] = rows[k:] + rows[:k]


def _inject_broken_quotes(sample: dict[str, Any], rng: random.Random) -> Injected | None:
    spots = [
        (t, i)
        for t in sample["tables"]
        for i, s in enumerate(t.get("insert_statements") or [])
        if _QUOTE_IN_WORD.search(s)
    ]
    if not spots:
        return None
    table, i = rng.choice(spots)
    table["insert_statements"][i] = _QUOTE_IN_WORD.sub("\\\\'", table["insert_statements"][i], 1)
    return Injected("broken_quotes", table=str(table["table_name"]))


def _inject_unbalanced_ddl(db: dict[str, Any], rng: random.Random) -> Injected | None:
    tables = [t for t in db["tables"] if str(t.get("ddl", "")).rstrip().rstrip(";").endswith(")")]
    if not tables:
        return None
    table = rng.choice(tables)
    ddl = str(table["ddl"]).rstrip().rstrip(";")
    table["ddl"] = ddl[:-1].rstrip() + ";"
    return Injected("unbalanced_ddl", table=str(table["name"]))


def _inject_now_in_data(sample: dict[str, Any], rng: random.Random) -> Injected | None:
    spots = [
        (t, i)
        for t in sample["tables"]
        for i, s in enumerate(t.get("insert_statements") or [])
        if _DATE_LITERAL.search(s)
    ]
    if not spots:
        return None
    table, i = rng.choice(spots)
    table["insert_statements"][i] = _DATE_LITERAL.sub(
        "datetime('now')", table["insert_statements"][i], 1
    )
    return Injected("now_in_data", table=str(table["table_name"]))


def _with_clock_read(code: str) -> str:
    head, sep, rest = code.partition("def verify_task_completion(")
    signature, colon, body = rest.partition(":\n")
    return head + sep + signature + colon + _CLOCK_READ + body


def _variant(
    env: str,
    files: dict[str, Any],
    index: int,
    rng: random.Random,
    plain: bool,
    rates: dict[str, float],
) -> tuple[dict[str, list[dict[str, Any]]], ScenarioPlan]:
    """Scenario ``index``'s rows (one list per file) and what was done to them."""
    name = f"{env}_{index}"
    f = json.loads(json.dumps(files))  # a deep copy of plain JSON
    scenario, tasks_row = f["gen_scenario.jsonl"][0], f["gen_tasks.jsonl"][0]
    db, sample = f["gen_db.jsonl"][0], f["gen_sample.jsonl"][0]
    for rows in f.values():
        for row in rows:
            row["name" if "name" in row and "scenario" not in row else "scenario"] = name
            if "db_path" in row:
                row["db_path"] = f"./outputs/databases/{name}.db"
    scenario["description"] = f"{scenario['description']} (variant {index} of {env})"
    n = len(tasks_row["tasks"])
    order = list(range(n))  # order[new] = old
    if not plain:
        rng.shuffle(order)
    new_of = {old: new for new, old in enumerate(order)}
    texts = tasks_row["tasks"]
    tasks_row["tasks"] = [("" if plain else rng.choice(_PHRASINGS)) + texts[old] for old in order]
    by_file: dict[str, dict[int, dict[str, Any]]] = {}
    for fname in ("gen_verifier.jsonl", "gen_verifier.pure_code.jsonl"):
        rows = {}
        for row in f[fname]:
            new = new_of[int(row["task_idx"])]
            row["task_idx"], row["task"] = new, tasks_row["tasks"][new]
            rows[new] = row
        by_file[fname] = rows
    plan = ScenarioPlan(name, env, tasks=n)
    if not plain:
        ddl = {str(t["name"]): str(t.get("ddl", "")) for t in db["db_schema"]["tables"]}
        _rotate_inserts(sample["sample_data"]["tables"], ddl, rng)
        plan.sql_only_tasks = sorted(t for t in range(n) if rng.random() < SQL_ONLY_RATE)
        for t in plan.sql_only_tasks:
            by_file["gen_verifier.pure_code.jsonl"].pop(t, None)
        _inject_defects(plan, db["db_schema"], sample["sample_data"], by_file, rng, rates)
    for fname, rows in by_file.items():
        f[fname] = [rows[t] for t in sorted(rows)]
    return f, plan


def _inject_defects(
    plan: ScenarioPlan,
    db: dict[str, Any],
    sample: dict[str, Any],
    by_file: dict[str, dict[int, dict[str, Any]]],
    rng: random.Random,
    rates: dict[str, float],
) -> None:
    code_rows = by_file["gen_verifier.pure_code.jsonl"]
    used: set[int] = set()  # one defect per task, so each is found on its own

    def code_task() -> int | None:
        free = sorted(set(code_rows) - used)
        if not free:
            return None
        t = rng.choice(free)
        used.add(t)
        return t

    for kind in DEFECT_RATES:
        if rng.random() >= rates.get(kind, 0.0):
            continue
        injected: Injected | None = None
        if kind == "broken_quotes":
            injected = _inject_broken_quotes(sample, rng)
        elif kind == "unbalanced_ddl":
            injected = _inject_unbalanced_ddl(db, rng)
        elif kind == "now_in_data":
            injected = _inject_now_in_data(sample, rng)
        elif kind == "missing_verifier":
            free = sorted(set(range(plan.tasks)) - used)
            if free:
                t = rng.choice(free)
                used.add(t)
                by_file["gen_verifier.jsonl"].pop(t, None)
                code_rows.pop(t, None)
                injected = Injected(kind, task_idx=t)
        elif (t := code_task()) is not None:
            verification = code_rows[t]["verification"]
            if kind == "pre_solved":
                verification["code"] = _PRE_SOLVED_CODE
            else:  # now_in_verifier
                verification["code"] = _with_clock_read(verification["code"])
            injected = Injected(kind, task_idx=t)
        if injected is not None:  # None: nothing in this scenario to break that way
            plan.defects.append(injected)


def write_release(
    out: Path,
    scenarios: int = 1000,
    *,
    seed: int = 0,
    envs: Sequence[str] | None = None,
    rows: dict[str, dict[str, Any]] | None = None,
    rates: dict[str, float] | None = None,
) -> list[ScenarioPlan]:
    """Write ``scenarios`` scenarios into ``out`` (replaced) in the official layout.

    ``envs`` limits the catalog environments used (default: all); ``rows`` reuses
    :func:`catalog_rows` output. Returns (and writes to ``OUT/awm1k-release.json``)
    one plan per scenario: its source and the defects injected into it. ``rates``
    replaces :data:`DEFECT_RATES` (a test at small N sets 1.0 to meet every kind).
    """
    from awm_envs.awm1k.read import FILES

    rates = DEFECT_RATES if rates is None else rates
    source = rows if rows is not None else catalog_rows(envs)
    names = sorted(source)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    handles = {name: (out / name).open("w", encoding="utf-8") for name in FILES.values()}
    plans = []
    try:
        for i in range(scenarios):
            env = names[i % len(names)]
            rng = random.Random(f"{seed}:{i}")
            files, plan = _variant(env, source[env], i, rng, i < len(names), rates)
            plans.append(plan)
            for fname, file_rows in files.items():
                for row in file_rows:
                    handles[fname].write(json.dumps(row) + "\n")
    finally:
        for h in handles.values():
            h.close()
    manifest = {
        "seed": seed,
        "scenarios": scenarios,
        "defect_rates": rates,
        "sql_only_rate": SQL_ONLY_RATE,
        "plans": [asdict(p) for p in plans],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return plans


def defect_counts(plans: Sequence[ScenarioPlan]) -> dict[str, int]:
    """How many of each defect kind the plans hold."""
    counts = dict.fromkeys(DEFECT_RATES, 0)
    for plan in plans:
        for d in plan.defects:
            counts[d.kind] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--scenarios", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env", action="append", help="catalog environments to vary (default all)")
    args = parser.parse_args(argv)
    plans = write_release(args.out, args.scenarios, seed=args.seed, envs=args.env)
    print(json.dumps({"scenarios": len(plans), "defects": defect_counts(plans)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
