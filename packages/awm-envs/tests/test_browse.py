"""Catalog browsing: ``awm envs list`` with validation status, ``show --schema``, ids vs paths."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_envs import load_environment
from awm_envs.bundle.sources import CATALOG_DIR


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    root = build_cli()
    return lambda *args: runner.invoke(root, list(args), catch_exceptions=False)


def test_list_shows_sizes_and_validation_status(cli, tmp_path: Path) -> None:
    shop_tasks = len(load_environment("shop").tasks)  # ten plain, conversational, access control
    rows = {r["id"]: r for r in json.loads(cli("envs", "list", "--json").output)}
    assert len(rows) >= 10
    shop = rows["shop"]
    assert (
        shop["tables"] >= 8
        and shop["rows"] >= 300
        and shop["tools"] >= 20
        and shop["tasks"] == shop_tasks > 10
    )
    # fresh cache: the record shipped with the catalog (same content hash)
    assert shop["validation"]["source"] == "shipped" and shop["validation"]["passed"] is True
    assert cli("envs", "validate", "shop").exit_code == 0
    rows = {r["id"]: r for r in json.loads(cli("envs", "list", "--json").output)}
    assert rows["shop"]["validation"]["passed"] is True
    assert rows["shop"]["validation"]["proven"] == shop_tasks
    assert "source" not in rows["shop"]["validation"]  # this machine's own record now
    assert rows["bank"]["validation"]["source"] == "shipped"


def test_validation_status_is_forgotten_when_the_bundle_changes(cli, tmp_path: Path) -> None:
    copy = tmp_path / "bundles" / "shop"
    shutil.copytree(CATALOG_DIR / "shop", copy)
    assert cli("envs", "validate", str(copy)).exit_code == 0
    listed = {
        r["id"]: r
        for r in json.loads(cli("envs", "list", "--catalog", str(copy.parent), "--json").output)
    }
    assert listed["shop"]["source"] != "catalog" and listed["shop"]["validation"]["passed"]
    (copy / "tasks.json").write_text((copy / "tasks.json").read_text() + "\n")
    listed = {
        r["id"]: r
        for r in json.loads(cli("envs", "list", "--catalog", str(copy.parent), "--json").output)
    }
    assert listed["shop"]["validation"] is None


def test_validation_record_prefers_this_machines_record_to_the_shipped_one(
    cli, tmp_path: Path
) -> None:
    from awm_envs import validation_record
    from awm_envs.validation.record import save_record

    shipped = validation_record("bank", CATALOG_DIR / "bank")
    assert shipped is not None and shipped["source"] == "shipped" and shipped["passed"]
    save_record("bank", CATALOG_DIR / "bank", proven=3, tasks=10, passed=False)
    local = validation_record("bank", CATALOG_DIR / "bank")
    assert local is not None and local["source"] == "local" and local["proven"] == 3
    copy = tmp_path / "bank"
    shutil.copytree(CATALOG_DIR / "bank", copy)
    (copy / "seed.sql").write_text((copy / "seed.sql").read_text() + "\n-- edited\n")
    assert validation_record("bank", copy) is None  # other content: neither record applies


def test_validate_accepts_an_id_from_a_catalog_folder(cli, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    shutil.copytree(CATALOG_DIR / "bank", folder / "mybank")
    manifest = json.loads((folder / "mybank" / "manifest.json").read_text())
    manifest["id"] = "mybank"
    (folder / "mybank" / "manifest.json").write_text(json.dumps(manifest))
    assert cli("envs", "validate", "mybank").exit_code != 0  # unknown without the folder
    assert cli("envs", "validate", "mybank", "--catalog", str(folder)).exit_code == 0


def test_show_schema_draws_tables_keys_and_indexes(cli) -> None:
    out = cli("envs", "show", "shop", "--schema", "--json")
    schema = json.loads(out.output)
    assert len(schema) >= 8
    fks = [fk for t in schema.values() for fk in t["foreign_keys"]]
    assert fks and all("." in fk["references"] for fk in fks)
    assert any(ix for t in schema.values() for ix in t["indexes"])
    text = cli("envs", "show", "shop", "--schema").output
    assert "PK" in text and "FK →" in text


def test_show_lists_tools_with_parameters_and_tasks(cli) -> None:
    text = cli("envs", "show", "bank").output
    assert "tools (" in text and f"tasks ({len(load_environment('bank').tasks)})" in text
    assert "very_hard" in text
