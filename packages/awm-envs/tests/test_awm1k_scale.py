"""AWM-1K at release scale, in small: the generated release, its defects, and kills.

A release of 12 scenarios from the generator of ``benchmarks/awm1k_release.py``
(3 catalog environments, every variant given every defect kind) is imported and
validated by the real ``awm`` commands. Each command is killed with SIGKILL (the
whole process group: workers and sandboxes too) mid-run and rerun with the same
arguments; the rerun must finish with the result of an uninterrupted run, reuse
what the killed run finished, and leave nothing half-written behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from awm1k_release import DEFECT_RATES, MANIFEST, defect_counts, write_release

pytestmark = pytest.mark.slow

ENVS = ["bank", "shop", "tickets"]
SCENARIOS = 12
ALL_DEFECTS = dict.fromkeys(DEFECT_RATES, 1.0)


def _awm(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "awm_core.cli", *map(str, args)]


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "AWM_CACHE_DIR": str(tmp / "cache"), "NO_COLOR": "1"}


def _run(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, env=_env(tmp), timeout=900)


def _kill_when(args: list[str], tmp: Path, ready: Callable[[], bool]) -> None:
    """Start ``args``, wait until ``ready()``, then SIGKILL its whole process group."""
    proc = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(tmp),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while not ready():
            assert proc.poll() is None, "the command finished before it could be killed"
            assert time.monotonic() < deadline, "the command made no progress"
            time.sleep(0.05)
        assert proc.poll() is None, "the command finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("awm1k") / "release"
    write_release(out, SCENARIOS, seed=7, envs=ENVS, rates=ALL_DEFECTS)
    return out


def _plans(release: Path) -> list[dict[str, Any]]:
    plans: list[dict[str, Any]] = json.loads((release / MANIFEST).read_text())["plans"]
    return plans


def _comparable(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scenario what an import found; ``imported`` and ``skipped`` (done earlier) alike."""
    return [
        {**r, "status": r["status"].replace("skipped", "imported"), "path": Path(r["path"]).name}
        for r in report["results"]
    ]


def _bundle_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".awm-import" not in p.parts and p.name != "import-report.json"
    }


def test_generator_is_deterministic_and_injects_every_kind(tmp_path: Path, release: Path) -> None:
    again = tmp_path / "again"
    write_release(again, SCENARIOS, seed=7, envs=ENVS, rates=ALL_DEFECTS)
    for name in sorted(p.name for p in release.iterdir()):
        assert (again / name).read_bytes() == (release / name).read_bytes(), name
    other = tmp_path / "other"
    write_release(other, SCENARIOS, seed=8, envs=ENVS, rates=ALL_DEFECTS)
    assert (other / "gen_tasks.jsonl").read_bytes() != (release / "gen_tasks.jsonl").read_bytes()
    plans = _plans(release)
    assert [p["name"] for p in plans[:4]] == ["bank_0", "shop_1", "tickets_2", "bank_3"]
    assert not any(p["defects"] for p in plans[:3])  # the plain exports
    counts = defect_counts([])
    for p in plans:
        for d in p["defects"]:
            counts[d["kind"]] += 1
    assert all(n >= 3 for n in counts.values()), counts
    names = [json.loads(line)["name"] for line in (release / "gen_scenario.jsonl").open()]
    assert names == [p["name"] for p in plans]


def test_import_killed_and_rerun_matches_an_uninterrupted_import(
    tmp_path: Path, release: Path
) -> None:
    whole = tmp_path / "whole"
    done = _run(_awm("envs", "import-awm", release, "--out", whole, "--json"), tmp_path)
    assert done.returncode == 0, done.stderr
    expected = json.loads((whole / "import-report.json").read_text())
    assert expected["counts"] == {"imported": SCENARIOS, "skipped": 0, "failed": 0}

    resumed = tmp_path / "resumed"
    records = resumed / ".awm-import" / "done"
    args = _awm("envs", "import-awm", release, "--out", resumed, "--workers", "1", "--json")
    _kill_when(args, tmp_path, lambda: records.is_dir() and len(list(records.iterdir())) >= 3)
    finished = sorted(p.name for p in resumed.iterdir() if (p / "manifest.json").is_file())
    assert 0 < len(finished) < SCENARIOS
    rerun = _run(args, tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads((resumed / "import-report.json").read_text())
    assert report["counts"]["skipped"] == len(finished)  # not imported again
    assert report["counts"]["imported"] == SCENARIOS - len(finished)
    assert _comparable(report) == _comparable(expected)
    assert report["totals"] == expected["totals"]
    assert _bundle_files(resumed) == _bundle_files(whole)
    assert not list((resumed / ".awm-import").glob("*.partial"))

    # every injected defect is reported by the import
    by_name = {r["scenario"]: r for r in report["results"]}
    for plan in _plans(release):
        result = by_name[plan["name"]]
        messages = [p["message"] for p in result["problems"]]
        for d in plan["defects"]:
            kind, task = d["kind"], d["task_idx"]
            if kind == "broken_quotes":
                assert result["counts"]["inserts_quotes_repaired"] == 1
            elif kind == "unbalanced_ddl":
                assert (
                    f"repaired an unbalanced parenthesis in the DDL of {d['table']!r}" in messages
                )
            elif kind == "missing_verifier":
                assert f"task {task} has no usable verifier" in messages
            elif kind == "now_in_data":
                assert result["counts"]["clock_reads_frozen"] == 1
                seed = (whole / plan["name"] / "seed.sql").read_text()
                assert "'now'" not in seed
            elif kind == "now_in_verifier":
                assert any(
                    m.startswith(f"task {task}: the verifier reads the wall clock")
                    for m in messages
                )
        if not plan["defects"]:
            assert not messages, messages
            assert result["counts"]["clock_reads_frozen"] == 0


def test_validate_killed_and_rerun_matches_an_uninterrupted_validation(
    tmp_path: Path, release: Path
) -> None:
    bundles = tmp_path / "bundles"
    names = ["bank_3", "shop_4", "tickets_5"]  # variants with every defect kind
    only = [a for n in names for a in ("--only", n)]
    done = _run(_awm("envs", "import-awm", release, "--out", bundles, *only), tmp_path)
    assert done.returncode == 0, done.stderr
    paths = [bundles / n for n in names]

    whole = _run(_awm("envs", "validate", *paths, "--json"), tmp_path)
    expected = json.loads(whole.stdout)
    assert whole.returncode == 1  # the injected pre-solved and unverified tasks fail

    journal = tmp_path / "validate.jsonl"
    args = _awm("envs", "validate", *paths, "--json", "--journal", journal)
    _kill_when(args, tmp_path, lambda: journal.is_file() and journal.read_bytes().count(b"\n") >= 1)
    finished = journal.read_bytes().count(b"\n")
    assert 0 < finished < len(names)
    rerun = _run(args, tmp_path)
    assert rerun.returncode == whole.returncode
    assert json.loads(rerun.stdout) == expected
    assert journal.read_bytes().count(b"\n") == len(names)  # the finished ones not validated again

    # every pre-solved and every verifier-less task is failed by validation, nothing else is
    by_env = {e["env_id"]: {t["task_id"]: t for t in e["tasks"]} for e in expected}
    plans = {p["name"]: p for p in _plans(release)}
    for name in names:
        broken = {
            d["task_idx"]: d["kind"] for d in plans[name]["defects"] if d["task_idx"] is not None
        }
        assert "pre_solved" in broken.values() and "missing_verifier" in broken.values()
        for task_id, task in by_env[name].items():
            kind = broken.get(int(task_id.removeprefix("task_")))
            if kind == "pre_solved":
                assert task["proof"] == "failed"
                assert (
                    "initial: the untouched initial database is already complete"
                    in task["problems"]
                )
            elif kind == "missing_verifier":
                assert task["proof"] == "failed"
                assert "task names no verifier" in task["problems"]
            else:
                assert task["proof"] in ("unproven", "undecided"), (name, task_id, task["problems"])


ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "awm1k.md"


def _release_scale_block() -> list[str]:
    """The command lines of docs/awm1k.md's "At release scale" block."""
    text = DOCS.read_text(encoding="utf-8").split("## At release scale", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_release_scale_docs_commands_run_at_two_scenarios(tmp_path: Path) -> None:
    lines = _release_scale_block()
    assert len(lines) == 4 and all("--scenarios 1000" in lines[i] for i in (0, 3))
    env = {
        **_env(tmp_path),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for line in lines:
        command = line.replace("--scenarios 1000", "--scenarios 2").replace(
            "python packages/", f"{sys.executable} {ROOT}/packages/"
        )
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (line, done.stderr[-2000:])
    imported = json.loads((tmp_path / "import.json").read_text())
    assert imported["counts"] == {"imported": 2, "skipped": 0, "failed": 0}
    validated = json.loads((tmp_path / "validate.json").read_text())
    assert sorted(e["env_id"] for e in validated) == ["bank_0", "clinic_1"]
    assert (tmp_path / "validate.jsonl").read_bytes().count(b"\n") == 2
    scale = json.loads((tmp_path / "awm1k-scale.json").read_text())
    assert scale["scenarios"] == 2 and scale["import_counts"]["imported"] == 2
    assert scale["peak_rss_mib"]["validate"] > 0 and scale["seconds"]["validate"] > 0


def test_validate_starts_one_verifier_sandbox_for_all_environments(
    tmp_path: Path, release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from awm_envs.cli.validate import validate_command
    from awm_envs.verifiers import pool as pool_module

    bundles = tmp_path / "bundles"
    only = ["--only", "bank_0", "--only", "shop_1"]
    done = _run(_awm("envs", "import-awm", release, "--out", bundles, *only), tmp_path)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))
    started: list[object] = []
    real_init = pool_module.VerifierPool.__init__

    def counting_init(self: pool_module.VerifierPool, *args: Any, **kwargs: Any) -> None:
        started.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(pool_module.VerifierPool, "__init__", counting_init)
    out = CliRunner().invoke(
        validate_command, [str(bundles / "bank_0"), str(bundles / "shop_1"), "--json"]
    )
    assert out.exit_code == 0, out.output
    results = json.loads(out.stdout)
    assert [e["env_id"] for e in results] == ["bank_0", "shop_1"]
    assert all(t["proof"] in ("unproven", "undecided") for e in results for t in e["tasks"])
    assert len(started) == 1  # one sandbox, shared by both environments
