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
from awm_envs import CATALOG_DIR, load_environment
from awm_train.prepare import AGENT_NAME, ManifestMismatchError, splits_from_manifest


def _prepare(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(build_cli(), ["train", "prepare", *args, "--json"])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    out["stderr"] = result.stderr
    return out


def _rows(folder: Path, split: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(folder / f"{split}.parquet").to_pylist()
    return rows


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
    assert {"bundle_source", "bundle_path", "bundle_pull"} <= set(extra)  # awm_train.bundles
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
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("envs", [("shop", "bank"), ("shop",)])
def test_an_empty_validation_split_is_an_error_not_a_file(
    tmp_path: Path, envs: tuple[str, ...]
) -> None:
    from awm_train.prepare import EmptySplitError

    result = CliRunner().invoke(
        build_cli(),
        ["train", "prepare", *envs, "--val-fraction", "0", "--include-unproven"]
        + ["--out", str(tmp_path)],
    )
    assert isinstance(result.exception, EmptySplitError), result.output
    assert "validation split would be empty" in str(result.exception)
    assert "--val-fraction" in str(result.exception)
    assert not list(tmp_path.iterdir())


def test_too_few_tasks_to_split_is_an_error() -> None:
    from awm_train.prepare import EmptySplitError, select_tasks, split_tasks

    with pytest.raises(EmptySplitError, match="no task selected"):
        split_tasks([])
    one = select_tasks(["shop"], proven_only=False)[:1]
    with pytest.raises(EmptySplitError, match="need at least two"):
        split_tasks(one)


def test_one_environment_holds_out_a_seeded_share_of_its_tasks(tmp_path: Path) -> None:
    out = _prepare("shop", "--include-unproven", "--out", str(tmp_path / "a"))
    assert out["filters"]["split"] == "task" and out["filters"]["val_fraction"] == 0.1
    train, val = _rows(tmp_path / "a", "train"), _rows(tmp_path / "a", "val")
    ids = [r["extra_info"]["task_id"] for r in train + val]
    assert len(ids) == len(set(ids)) == len(load_environment("shop").tasks)
    assert len(val) == max(1, round(len(ids) * 0.1))
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["filters"]["split"] == "task"
    again = _prepare("shop", "--include-unproven", "--out", str(tmp_path / "b"))
    assert again["counts"] == out["counts"]
    assert _rows(tmp_path / "b", "val") == val  # the same seed holds out the same tasks
    other = _prepare("shop", "--include-unproven", "--seed", "x", "--out", str(tmp_path / "c"))
    assert other["counts"] == out["counts"]


def test_several_environments_hold_out_a_tenth_of_them_by_default(tmp_path: Path) -> None:
    out = _prepare("shop", "bank", "--include-unproven", "--out", str(tmp_path))
    assert out["filters"]["split"] == "environment"
    assert out["counts"]["train"]["environments"] == out["counts"]["val"]["environments"] == 1


def test_fewer_tasks_than_a_paper_batch_warns_naming_the_override(tmp_path: Path) -> None:
    from awm_train.prepare import paper_batch_size

    out = _prepare("shop", "--include-unproven", "--out", str(tmp_path))
    train = out["counts"]["train"]["tasks"]
    assert paper_batch_size() == 128 > train
    assert f"data.train_batch_size={train}" in out["stderr"]
    assert "fewer than one batch of the paper recipe (data.train_batch_size=128)" in out["stderr"]
    assert "awm envs import-awm" in out["stderr"] and "awm synth" in out["stderr"]


def test_a_manifest_of_moved_bundles_rebuilds_with_where_they_are_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = tmp_path / "made" / "shop-lab"
    shutil.copytree(CATALOG_DIR / "shop", bundle)
    (bundle / "manifest.json").write_text(
        (bundle / "manifest.json").read_text().replace('"shop"', '"shop-lab"', 1)
    )
    _prepare(str(bundle), "bank", "--include-unproven", "--out", str(tmp_path / "ds"))
    rows = _rows(tmp_path / "ds", "train") + _rows(tmp_path / "ds", "val")
    lab = [r["extra_info"] for r in rows if r["extra_info"]["env_id"] == "shop-lab"]
    assert lab and {(e["bundle_source"], e["bundle_path"]) for e in lab} == {
        ("bundle", str(bundle.resolve()))
    }
    shared = tmp_path / "shared"
    shutil.move(str(bundle), shared / "shop-lab")  # another machine keeps it elsewhere
    monkeypatch.setenv("AWM_ENV_PATH", str(shared))
    _prepare("--manifest", str(tmp_path / "ds" / "manifest.json"), "--out", str(tmp_path / "re"))
    again = _rows(tmp_path / "re", "train") + _rows(tmp_path / "re", "val")
    paths = {
        r["extra_info"]["bundle_path"] for r in again if r["extra_info"]["env_id"] == "shop-lab"
    }
    assert paths == {str((shared / "shop-lab").resolve())}
    assert [r["extra_info"]["task_sha256"] for r in again] == [
        r["extra_info"]["task_sha256"] for r in rows
    ]


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
