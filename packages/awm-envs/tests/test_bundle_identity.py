"""A bundle's identity: one file list, one content digest, one change fingerprint."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from awm_envs import CATALOG_DIR, Environment, load_bundle, load_environment
from awm_envs.bundle import identity
from awm_envs.hub.record import build_record
from awm_envs.pool.shipping import PackedBundles, ShippedBundle
from awm_envs.validation.record import shipped_validation_path


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CATALOG_DIR / "bank", tmp_path / "bank"))


def _touch_later(path: Path, text: str) -> None:
    """Rewrite ``path`` with a new mtime even on a coarse-clock file system."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_the_digest_covers_the_bundle_files_and_nothing_else(bank: Path) -> None:
    before = identity.digest(bank)
    (bank / "notes.txt").write_text("not a bundle file")
    assert identity.digest(bank) == before
    seed = bank / "seed.sql"
    seed.write_text(seed.read_text() + "\n-- edited\n")
    assert identity.digest(bank) != before


def test_who_owns_which_rows_is_bundle_content(bank: Path) -> None:
    """principals.json decides what counts as another user's data: a row prepared from one
    ownership map must not roll out under another, and push/pull must carry it."""
    principals = bank / identity.PRINCIPALS_JSON
    assert principals.is_file()
    before = identity.digest(bank)
    data = json.loads(principals.read_text())
    data["acting"] = 2  # the agent now acts for someone else
    principals.write_text(json.dumps(data))
    assert identity.digest(bank) != before
    assert identity.PRINCIPALS_JSON in build_record(identity.read_files(bank), "bank").files


def test_the_digest_is_the_hub_records_digest(bank: Path) -> None:
    record = build_record(identity.read_files(bank), "bank")
    assert record.digest == identity.digest(bank)
    assert set(record.files) == set(identity.BUNDLE_FILES)


def test_the_bundle_and_the_environment_expose_the_same_digest() -> None:
    env = load_environment("bank")
    assert env.digest == identity.digest(CATALOG_DIR / "bank")
    assert load_bundle(CATALOG_DIR / "bank").digest == env.digest
    # a fresh one (load_environment's is shared and another test may have imported its app)
    fresh = Environment(path=CATALOG_DIR / "bank")
    assert fresh.digest == env.digest
    assert not fresh.loaded  # the digest reads files; it does not import app.py


def test_every_shipped_validation_record_matches_its_bundle() -> None:
    records = json.loads(shipped_validation_path().read_text(encoding="utf-8"))
    assert records
    for env_id, record in records.items():
        assert record["digest"] == identity.digest(CATALOG_DIR / env_id), env_id


def test_the_fingerprint_changes_when_a_file_changes_and_skips_caches(bank: Path) -> None:
    before = identity.fingerprint(bank)
    assert before and all(Path(name).is_absolute() for name, _, _ in before)
    (bank / "__pycache__").mkdir()
    (bank / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"cache")
    assert identity.fingerprint(bank) == before
    _touch_later(bank / "tasks.json", (bank / "tasks.json").read_text())
    assert identity.fingerprint(bank) != before


def test_the_fingerprint_of_a_missing_folder_is_empty(tmp_path: Path) -> None:
    assert identity.fingerprint(tmp_path / "gone") == ()


def test_a_shipped_bundle_unpacks_to_every_file_it_packed(bank: Path) -> None:
    (bank / "data").mkdir()
    (bank / "data" / "extra.txt").write_bytes(b"extra")
    bundle = ShippedBundle.pack(bank)
    files = bundle.files()
    assert files["data/extra.txt"] == b"extra"
    assert files["seed.sql"] == (bank / "seed.sql").read_bytes()
    assert len(bundle.key) == 16 and bundle.key.isalnum()


def test_packed_bundles_pack_an_edited_folder_again_and_keep_a_vanished_ones_copy(
    bank: Path,
) -> None:
    packed = PackedBundles()
    first = packed.get(str(bank))
    assert packed.get(str(bank)) is first
    _touch_later(bank / "seed.sql", (bank / "seed.sql").read_text() + "\n-- edited\n")
    second = packed.get(str(bank))
    assert second.key != first.key
    shutil.rmtree(bank)
    assert packed.get(str(bank)) is second
