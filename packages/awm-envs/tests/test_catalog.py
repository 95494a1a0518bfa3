"""Every catalog environment meets the catalog's bar (sizes, buckets, refusals, determinism)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from awm_core.models import Complexity, EnvironmentManifest, Task, complexity_for_calls
from awm_envs.validation.catalog_stats import catalog_stats
from awm_envs.validation.validate import CATALOG_DIR, catalog_env_ids

ENV_IDS = catalog_env_ids()


def test_catalog_is_not_empty() -> None:
    assert ENV_IDS, f"no environments under {CATALOG_DIR}"


@pytest.fixture(params=ENV_IDS)
def env_dir(request: pytest.FixtureRequest) -> Path:
    return CATALOG_DIR / request.param


def _db(env_dir: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript((env_dir / "schema.sql").read_text())
    conn.executescript((env_dir / "seed.sql").read_text())
    return conn


def test_manifest_is_valid_and_named_after_its_folder(env_dir: Path) -> None:
    manifest = EnvironmentManifest.model_validate_json((env_dir / "manifest.json").read_bytes())
    assert manifest.id == env_dir.name
    assert len(manifest.description) > 200, (
        "the scenario description should be realistic and specific"
    )
    assert manifest.user_id == 1


def test_schema_has_eight_tables_with_foreign_keys_and_indexes(env_dir: Path) -> None:
    stats = catalog_stats(env_dir)
    assert stats.tables >= 8
    assert stats.tables_with_foreign_keys >= stats.tables - 3
    assert stats.indexes >= 3


def test_seed_has_300_rows_and_consistent_foreign_keys(env_dir: Path) -> None:
    conn = _db(env_dir)
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert catalog_stats(env_dir).rows >= 300


def test_seed_never_reads_the_clock(env_dir: Path) -> None:
    seed = (env_dir / "seed.sql").read_text().lower()
    assert not re.search(r"\bnow\b|current_timestamp|current_date|current_time", seed)


def test_app_never_reads_the_clock(env_dir: Path) -> None:
    app = (env_dir / "app.py").read_text()
    assert not re.search(r"datetime\.now|datetime\.utcnow|date\.today|time\.time\(", app)


def test_at_least_twenty_tools(env_dir: Path) -> None:
    assert catalog_stats(env_dir).tools >= 20


def test_ten_tasks_cover_every_bucket_with_a_refusal(env_dir: Path) -> None:
    tasks = [Task.model_validate(t) for t in json.loads((env_dir / "tasks.json").read_text())]
    # ten single-instruction tasks; conversational variants (a user section) come on top
    assert len([t for t in tasks if t.user is None]) >= 10
    assert {t.complexity for t in tasks} == set(Complexity)
    assert any(t.expects_refusal for t in tasks)
    for t in tasks:
        assert t.reference_solution, t.id
        assert len(t.reference_solution) <= 20, f"{t.id} exceeds the 20-step budget"
        assert complexity_for_calls(len(t.reference_solution)) == t.complexity, t.id
        assert t.verifier, t.id
        if t.expects_refusal:
            assert t.reference_answer, f"{t.id}: a refusal task needs the answer that explains why"


def test_seed_generator_is_reproducible(env_dir: Path) -> None:
    generator = Path(__file__).resolve().parents[1] / "tools" / "catalog_gen" / f"{env_dir.name}.py"
    if not generator.is_file():
        pytest.skip("no generator for this environment")
    import importlib.util
    import sys

    sys.path.insert(0, str(generator.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"_gen_{env_dir.name}", generator)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        rendered = module.build().render()
    finally:
        sys.path.remove(str(generator.parent))
    assert rendered == (env_dir / "seed.sql").read_text(), "re-run the generator: seed.sql is stale"
