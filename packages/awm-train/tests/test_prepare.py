"""``awm train prepare``: verl parquet from catalog and bundle environments, splits, manifests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from awm_core.cli import build_cli
from awm_envs import CATALOG_DIR
from awm_train.prepare import AGENT_NAME, ManifestMismatchError, splits_from_manifest


def _prepare(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(build_cli(), ["train", "prepare", *args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ds")
    _prepare("shop", "bank", "food", "--val-env", "food", "--out", str(out))
    return out


def test_rows_have_the_columns_verl_reads(dataset: Path) -> None:
    rows = pq.read_table(dataset / "train.parquet").to_pylist()
    assert rows, "no training rows"
    row = rows[0]
    assert row["agent_name"] == AGENT_NAME and row["data_source"] == "awm/catalog"
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert "list_tools" in row["prompt"][0]["content"]
    extra = row["extra_info"]
    assert {"env_id", "task_id", "bundle_sha256", "task_sha256", "index", "split"} <= set(extra)
    assert row["reward_model"]["ground_truth"] == f"{extra['env_id']}/{extra['task_id']}"
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))


def test_splits_keep_each_environment_whole(dataset: Path) -> None:
    train = {
        r["extra_info"]["env_id"] for r in pq.read_table(dataset / "train.parquet").to_pylist()
    }
    val = {r["extra_info"]["env_id"] for r in pq.read_table(dataset / "val.parquet").to_pylist()}
    assert train == {"shop", "bank"} and val == {"food"}


def test_the_same_inputs_give_the_same_manifest(dataset: Path, tmp_path: Path) -> None:
    _prepare("shop", "bank", "food", "--val-env", "food", "--out", str(tmp_path))
    assert (tmp_path / "manifest.json").read_text() == (dataset / "manifest.json").read_text()


def test_a_manifest_rebuilds_the_subset_exactly(dataset: Path, tmp_path: Path) -> None:
    _prepare("--manifest", str(dataset / "manifest.json"), "--out", str(tmp_path))
    for split in ("train", "val"):
        again = pq.read_table(tmp_path / f"{split}.parquet").to_pylist()
        assert again == pq.read_table(dataset / f"{split}.parquet").to_pylist()


def test_a_changed_environment_fails_the_manifest(dataset: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "shop"
    shutil.copytree(CATALOG_DIR / "shop", bundle)
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert splits_from_manifest(manifest, {"shop": bundle})  # an identical copy is accepted
    with (bundle / "seed.sql").open("a") as f:
        f.write("\n-- edited\n")
    with pytest.raises(ManifestMismatchError, match="environment 'shop' differs"):
        splits_from_manifest(manifest, {"shop": bundle})


def test_filters_by_complexity_and_a_hashed_val_fraction(tmp_path: Path) -> None:
    out = _prepare(
        "shop",
        "bank",
        "food",
        "--complexity",
        "easy",
        "--val-fraction",
        "0.34",
        "--out",
        str(tmp_path),
    )
    assert out["counts"]["val"]["environments"] == 1
    rows = [
        *pq.read_table(tmp_path / "train.parquet").to_pylist(),
        *pq.read_table(tmp_path / "val.parquet").to_pylist(),
    ]
    assert rows and {r["extra_info"]["complexity"] for r in rows} == {"easy"}


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(
        build_cli(), ["train", "prepare", "shop", "--out", str(tmp_path), "--complexity", "tiny"]
    )
    assert bad.exit_code == 2 and "unknown bucket" in bad.output
    none = runner.invoke(build_cli(), ["train", "prepare", "--out", str(tmp_path)])
    assert none.exit_code == 2 and "--catalog" in none.output
    only_val = runner.invoke(
        build_cli(), ["train", "prepare", "shop", "--val-env", "shop", "--out", str(tmp_path)]
    )
    assert only_val.exit_code != 0 and "nothing left to train on" in str(only_val.output) + str(
        only_val.exception
    )


def test_only_proven_tasks_by_default_an_unproven_one_is_left_out(tmp_path: Path) -> None:
    from awm_train.prepare import select_tasks

    bundle = tmp_path / "shop-copy"
    shutil.copytree(CATALOG_DIR / "shop", bundle)
    tasks = json.loads((bundle / "tasks.json").read_text())
    tasks[0]["reference_solution"] = None  # what an imported AWM-1K task looks like
    tasks[0].pop("reference_answer", None)
    (bundle / "tasks.json").write_text(json.dumps(tasks))
    (bundle / "manifest.json").write_text(
        (bundle / "manifest.json").read_text().replace('"shop"', '"shop-copy"', 1)
    )
    kept = {t.task_id for t in select_tasks([bundle])}
    assert tasks[0]["id"] not in kept and len(kept) == len(tasks) - 1
    everything = {t.task_id for t in select_tasks([bundle], proven_only=False)}
    assert tasks[0]["id"] in everything
